"""The v0.7 reference's target-model converter (workloads/minigo/convert.py) on a small made
TF checkpoint: the reference's variable names (tf.layers creation order), random weights, the
reference's forward pass written with TF ops; the converted Flax net computes the same policy
and value. A checkpoint of another shape is refused, naming the variable."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from workloads.minigo import convert, match

tf = pytest.importorskip("tensorflow", reason="the tfds extra (tensorflow-cpu) is not installed")

N, WIDTH, FC, PLANES = 5, 8, 8, 17  # the smoke config's net: 1 residual block


def _make_checkpoint(prefix: str, planes: int, layout: str, x: np.ndarray):
    """Reference-named variables (random; BN variances > 0) saved by tf.compat.v1's Saver, and
    the reference's forward pass on `x` (NHWC) in the same graph: (policy logits, value)."""
    rng = np.random.default_rng(0)
    g = tf.Graph()
    with g.as_default():
        def var(name, shape, positive=False):
            value = rng.uniform(0.5, 1.5, shape) if positive else rng.normal(0, 0.3, shape)
            return tf.compat.v1.get_variable(name, initializer=value.astype(np.float32))

        def conv_bn(h, i, out, k, affine):
            s = "" if i == 0 else f"_{i}"
            h = tf.nn.conv2d(h, var(f"conv2d{s}/kernel", (k, k, h.shape[-1], out)), 1, "SAME")
            bn = f"batch_normalization{s}"
            gamma = var(f"{bn}/gamma", (out,)) if affine else None
            beta = var(f"{bn}/beta", (out,)) if affine else None
            return tf.nn.batch_normalization(h, var(f"{bn}/moving_mean", (out,)),
                                             var(f"{bn}/moving_variance", (out,), True),
                                             beta, gamma, 1e-5)

        def flat(h):  # the reference reshapes its layout's activations
            return tf.reshape(tf.transpose(h, (0, 3, 1, 2)) if layout == "nchw" else h,
                              (-1, h.shape[1] * h.shape[2] * h.shape[3]))

        def dense(h, i, out):
            s = "" if i == 0 else f"_{i}"
            return h @ var(f"dense{s}/kernel", (h.shape[-1], out)) + var(f"dense{s}/bias",
                                                                         (out,))

        h = tf.nn.relu(conv_bn(tf.constant(x[..., :planes]), 0, WIDTH, 3, True))
        r = tf.nn.relu(conv_bn(h, 1, WIDTH, 3, True))
        h = tf.nn.relu(h + conv_bn(r, 2, WIDTH, 3, True))
        logits = dense(flat(tf.nn.relu(conv_bn(h, 3, 2, 1, False))), 0, N * N + 1)
        v = tf.nn.relu(dense(flat(tf.nn.relu(conv_bn(h, 4, 1, 1, False))), 1, FC))
        value = tf.tanh(tf.reshape(dense(v, 2, 1), (-1,)))
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(sess, prefix)
            return sess.run([logits, value])


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_converted_reference_checkpoint_plays_as_the_reference_net(tmp_path, layout):
    """Same logits and value (1e-4) on random boards after converting the made checkpoint and
    loading it through `match.load_target`, as a run's `eval.target_file` is.

    Bites: BN scale and offset swapped (gamma -> bias), or the nchw dense reorder skipped,
    each moved the logits by O(1) (tried both)."""
    x = (np.random.default_rng(1).uniform(size=(4, N, N, PLANES)) > 0.5).astype(np.float32)
    want_logits, want_value = _make_checkpoint(str(tmp_path / "model.ckpt-1"), PLANES, layout, x)
    convert.convert_checkpoint(str(tmp_path / "model.ckpt-1"), str(tmp_path / "t.npz"),
                               "smoke", layout)
    w = registry.create(config_lib.load("minigo", "smoke"))
    target = match.load_target(str(tmp_path / "t.npz"), w.init_variables(jax.random.PRNGKey(0)))
    logits, value = w.apply(target, x)
    np.testing.assert_allclose(np.asarray(logits), want_logits, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(value), want_value, atol=1e-4, rtol=1e-4)


def test_a_checkpoint_of_another_shape_is_refused_naming_the_variable(tmp_path):
    """The v0.7 runs' 13-plane (mlperf07 features) stem against pgx's 17 planes; a path that is
    no checkpoint; nothing written either time."""
    x = np.zeros((1, N, N, PLANES), np.float32)
    _make_checkpoint(str(tmp_path / "m13.ckpt"), 13, "nhwc", x)
    with pytest.raises(UsageError, match=r"conv2d/kernel has shape \(3, 3, 13, 8\).*reads 13 "
                                         r"input planes, this workload feeds 17"):
        convert.convert_checkpoint(str(tmp_path / "m13.ckpt"), str(tmp_path / "o.npz"), "smoke")
    with pytest.raises(UsageError, match="not a TensorFlow checkpoint prefix"):
        convert.convert_checkpoint(str(tmp_path / "nothing"), str(tmp_path / "o.npz"), "smoke")
    assert not (tmp_path / "o.npz").exists()
