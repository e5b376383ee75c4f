"""SSD-MobileNet v1 / v2 (`ssd-mobilenet`, `ssd-mobilenetv2`) checked abstractly at full size:
the Flax MobileNet bodies against Keras's published architectures parameter for parameter,
the 300x300 detectors' maps, boxes and parameter counts by shape inference."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import steps
from tpubench.loops import supervised as train
from tpubench.nn.mobilenet import DepthwiseShifts
from workloads.ssd import mobilenet
from workloads.ssd import model as ssd_model


def _count(module, size: int = 224) -> int:
    p = jax.eval_shape(lambda: module.init(jax.random.key(0), jnp.zeros((1, size, size, 3)),
                                           train=False))
    return sum(x.size for x in jax.tree.leaves(p["params"]))


KERAS_COUNTS = {1.0: (3_206_976, 2_223_872), 0.5: (818_592, 687_680)}


@pytest.mark.parametrize("width", [1.0, 0.5])
def test_mobilenet_bodies_match_keras_parameter_for_parameter(width):
    """Trainable parameters of tf.keras.applications.MobileNet / MobileNetV2
    (include_top=False): 3,206,976 / 2,223,872 at width 1.0, 818,592 / 687,680 at 0.5 (the
    Keras counts, measured with TensorFlow 2.21 and recomputed by the slow test below).
    Bites: v2 without `make_divisible` (width 0.5: 16 * 0.5 = 8 channels kept, but 24 * 0.5 =
    12 instead of 16) or v1 with a bias on every conv."""
    ours = (_count(mobilenet.MobileNetV1(width)), _count(mobilenet.MobileNetV2(width)))
    assert ours == KERAS_COUNTS[width]


@pytest.mark.slow  # importing TensorFlow costs ~20 s on a quiet machine
@pytest.mark.parametrize("width", [1.0, 0.5])
def test_the_keras_counts_are_keras(width):
    """The figures above recomputed from tf.keras.applications (no weights downloaded)."""
    tf = pytest.importorskip("tensorflow")
    for fn, n in zip((tf.keras.applications.MobileNet, tf.keras.applications.MobileNetV2),
                     KERAS_COUNTS[width], strict=True):
        m = fn(include_top=False, weights=None, input_shape=(224, 224, 3), alpha=width)
        assert sum(int(np.prod(v.shape)) for v in m.trainable_weights) == n


@pytest.mark.parametrize("name, params, taps", [
    ("mobilenet_v1", 6_717_194, (512, 1024)),
    ("mobilenet_v2", 5_951_946, (576, 1280)),
])
def test_full_size_detectors_by_shape_inference(name, params, taps):
    """300x300: head maps 19/10/5/3/2/1 (the TF extractors' taps at 19 and 10, extras to 1),
    2,278 default boxes, the parameter count (measured: body + extras + 1x1 heads, 81 labels),
    the taps' channels. Bites: tapping v2's block 15 output (160 ch) instead of its expansion
    (576); an extra block at stride 1 (maps 19/10/10/...)."""
    w = registry.create(config_lib.load("ssd", name, {"data.source": "synthetic"}))
    w.check_shapes()
    assert ssd_model.feature_sizes(w.model(), 300) == [19, 10, 5, 3, 2, 1]
    assert w.anchor_spec.num_boxes == 2_278
    assert steps.param_count(w) == params
    body = {"mobilenet_v1": mobilenet.MobileNetV1, "mobilenet_v2": mobilenet.MobileNetV2}[name]()
    out = jax.eval_shape(lambda x: body.apply(body.init(jax.random.key(0), x, train=False), x,
                                              train=False), jnp.zeros((1, 300, 300, 3)))
    assert tuple(t.shape[-1] for t in out) == taps and out[0].shape[1] == 19


def test_unknown_backbone_is_refused():
    w = registry.create(config_lib.load("ssd", "mobilenet_v2_mini",
                                        {"data.source": "synthetic", "model.backbone": "vgg"}))
    with pytest.raises(ValueError, match="unknown backbone 'vgg'"):
        w.check_shapes()


@pytest.mark.parametrize("size, stride", [(9, 1), (8, 2)])
def test_depthwise_shifts_equal_the_grouped_conv(size, stride):
    """`DepthwiseShifts` (the minis' depthwise conv on XLA:CPU) against Flax's grouped
    `nn.Conv` with the same kernel: same params tree, outputs and input gradients equal to
    float32 rounding, at odd and even sizes and stride 2 (SAME's extra pad at the end).
    Bites: padding split evenly at stride 2 on size 8 (XLA pads 0 before, 1 after: output
    shifted by one pixel)."""
    x = jax.random.normal(jax.random.key(1), (2, size, size, 5))
    conv = nn.Conv(5, (3, 3), (stride, stride), padding="SAME", feature_group_count=5,
                   use_bias=False)
    shifts = DepthwiseShifts(3, stride)
    v = conv.init(jax.random.key(0), x)
    assert jax.tree.map(jnp.shape, nn.unbox(shifts.init(jax.random.key(0), x))) == \
        jax.tree.map(jnp.shape, v)
    def f(m):
        return jax.value_and_grad(lambda x: jnp.sum(jnp.sin(m.apply(v, x))))(x)

    (a, ga), (b, gb) = f(conv), f(shifts)
    np.testing.assert_allclose(a, b, rtol=1e-5)
    np.testing.assert_allclose(ga, gb, rtol=1e-5, atol=1e-6)
    out = shifts.apply(v, x)
    np.testing.assert_allclose(out, conv.apply(v, x), rtol=1e-5, atol=1e-6)
    assert out.shape[1] == -(-size // stride)



def test_bn_momentum_reaches_every_batch_norm():
    """`model.bn_momentum` is every batch norm's running-statistics momentum (backbone and extra
    blocks; v1 and v2 share `ConvBN` and the extras): at momentum 0 one train-mode pass sets
    each running statistic to the batch's, so the eval-mode output on that batch equals the
    train-mode one. A batch norm left at Keras's 0.999 (the full configs') keeps statistics
    near their init, which scored mAP 0.0001 where the same weights with batch statistics
    scored 0.0393 (the v2 mini at step 125, configs/mobilenet_v2_mini.py).
    Bites: the extra blocks built without the momentum (they keep 0.999: 64 of 704 outputs
    differ); every MobileNet batch norm at a fixed 0.999 (all 704 differ)."""
    cfg = config_lib.load("ssd", "mobilenet_v2_mini", {
        "data.source": "synthetic", "model.bn_momentum": 0.0, "model.depthwise_impl": "conv"})
    model = registry.create(cfg).model()
    x = jax.random.uniform(jax.random.key(2), (2, 32, 32, 1))
    # Made weights (fan-in scaled normals, BN scale 1, bias and mean 0, var 1) instead of
    # model.init, whose XLA:CPU compile alone took 90 s on the loaded 2-core machine.
    shapes = nn.unbox(jax.eval_shape(lambda x: model.init(jax.random.key(0), x, train=False), x))
    rng = np.random.default_rng(0)

    def made(path, leaf):
        name = jax.tree_util.keystr(path)
        if leaf.ndim > 1:
            return rng.normal(0, np.prod(leaf.shape[:-1]) ** -0.5, leaf.shape).astype(np.float32)
        return np.full(leaf.shape, float("'scale'" in name or "'var'" in name), np.float32)

    v = jax.tree_util.tree_map_with_path(made, shapes)

    def train_then_eval(m):
        out, new = m.apply(v, x, train=True, mutable=["batch_stats"])
        return out, m.apply({**v, **new}, x, train=False)

    for a, b in zip(*jax.jit(lambda: train_then_eval(model))(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["mobilenet_v2_mini", "mobilenet_v1_mini"])
def test_mobile_minis_train_at_the_measured_learning_rate_and_schedule(name):
    """The mobile minis' schedule, chosen by measurement (configs/mobilenet_v2_mini.py): lr
    0.02 after 100 warmup steps, x0.1 at steps 1,000 and 1,250, a 1,500-step budget (the
    ResNet mini's schedule; the earlier decays at 625 and 750 left v2 seed 0 at 0.4547, below
    the 0.4763 baseline); the ResNet mini keeps its 0.05. Bites: the mobile minis back on the
    ResNet mini's lr 0.05 (measured on v2 seed 0: loss spikes to 68 and mAP 0.0007 at step
    250, where 0.02 gives 0.1467) or on the earlier decays; v1 not inheriting v2's schedule."""
    c = config_lib.load("ssd", name, {"data.source": "synthetic"})
    w = registry.create(c)
    assert [float(w.learning_rate(s)) for s in (50, 100, 999, 1000, 1250)] == pytest.approx(
        [0.01, 0.02, 0.02, 0.002, 0.0002])
    assert c.run.max_train_samples // c.data.global_batch_size == 1500
    r = config_lib.load("ssd", "mini", {"data.source": "synthetic"})
    assert (r.optimizer.learning_rate, tuple(r.schedule.decay_steps)) == (0.05, (1000, 1250))


@pytest.mark.parametrize("name, width, params", [
    ("mobilenet_v2_mini", 0.35, 1_340_336),
    ("mobilenet_v1_mini", 0.5, 1_358_064),
])
def test_mobile_minis_bodies_by_shape_inference(name, width, params):
    """The minis' widths and parameter counts (measured; configs/mobilenet_v1_mini.py): the v1
    mini at width 0.5, about the v2 mini's size, since at width 0.25 (537,136 parameters) seed 0
    peaked at 0.4755, under the 0.4763 baseline, where width 0.5 reaches 0.52 at step 1,125.
    Both targets (0.52) are measured, not provisional.
    Bites: the v1 mini back at width 0.25 (537,136) or at v2's 0.35 (816,775); its target
    left provisional."""
    c = config_lib.load("ssd", name, {"data.source": "synthetic"})
    assert (c.model.width, c.eval.target_value, c.eval.target_provisional) == (width, 0.52, False)
    assert steps.param_count(registry.create(c)) == params


# The step each mobile mini's seed 0 reaches mAP 0.52 at, measured (their configs' docstrings):
# v2 (seeds 0 and 1) and v1 at width 0.5 (seed 0; seed 1 at 1,250) at the first eval after the
# decay at 1,000.
MINI_TARGET_STEPS = {"mobilenet_v2_mini": 1125, "mobilenet_v1_mini": 1125}


@pytest.mark.slow
@pytest.mark.extended  # ~1-1.5 h each on the loaded 2-core machine (~2-4 s a step at load 7-13)
@pytest.mark.parametrize("name", sorted(MINI_TARGET_STEPS))
def test_mobile_minis_reach_their_target_at_the_measured_step(name, tmp_path):
    """Seed 0 of each mobile mini reaches mAP 0.52 on the held-out canvases at step 1,125, the
    first eval after the lr decay at step 1,000 (budget: one eval of slack), above the strongest
    trivial detector (0.4763, baselines/ssd.py). Counter-cases measured: before the
    decay the curves peak at 0.3889 (v2) and 0.3861 (v1), and v2's earlier decays (steps 625 and
    750) stopped at 0.4547; the v1 mini at width 0.25 peaked at 0.4755 over 1,500 steps.
    Bites (the breaks measured, by earlier runs of the same code): v2's decays back at epochs 5
    and 6 (best 0.4547 over 875 steps, under 0.52: status aborted); the v1 mini back at width
    0.25 (0.4589 at step 1,125). Not run in full as a test (its runs are the configs' measured
    curves, `tpubench run`)."""
    from workloads.ssd.configs import mobilenet_v2_mini

    target_step = MINI_TARGET_STEPS[name]
    budget = (target_step + 125) * 32
    cfg = config_lib.load("ssd", name, {"run.max_train_samples": budget})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "success", s["quality_history"]
    assert s["final_quality"] >= s["target"] == mobilenet_v2_mini.TARGET == 0.52
    assert abs(s["steps"] - target_step) <= 125, s["steps"]
    assert all(h["quality"] < 0.52 for h in s["quality_history"][:-1])
