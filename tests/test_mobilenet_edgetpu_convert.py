"""The MobileNetEdgeTPU converter (`workloads/resnet/convert_mobilenet_edgetpu.py`) on a small
made file: an .npz of TF-slim names (written out here from slim's scope rules, not from the
converter) at width 0.25, every array distinct."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import slim_weights

from tpubench.errors import UsageError
from workloads.resnet import convert_mobilenet_edgetpu as convert
from workloads.resnet.mobilenet_edgetpu import MobileNetEdgeTPU

# slim's scopes: the stem `Conv`, the blocks `expanded_conv`, `expanded_conv_1`, ..., the last
# 1x1 `Conv_1`, the classifier `Logits/Conv2d_1c_1x1`.
SLIM_BLOCKS = slim_weights.slim_blocks(22)


def _abstract():
    model = MobileNetEdgeTPU(num_classes=11, width=0.25)
    v = jax.eval_shape(lambda: model.init(jax.random.key(0), jnp.zeros((1, 64, 64, 3)),
                                          train=False))
    return nn.unbox(v["params"]), {"batch_stats": nn.unbox(v["batch_stats"])}


def _made_file(params, stats):
    """TF-named arrays in TF layouts, each filled from its own seed; and the expected Flax
    value of every leaf, by our path."""
    rng = np.random.default_rng(0)
    tf, expected = {}, {}

    def conv(scope, ours, p, s):
        slim_weights.add_conv_bn(rng, tf, expected, scope, ours, p)

    conv("MobilenetEdgeTPU/Conv", "stem", params["stem"], None)
    for i, scope in enumerate(SLIM_BLOCKS, start=1):
        if f"block{i}" not in params:  # a cut plan (the smoke config's 3 blocks)
            break
        for part, p in params[f"block{i}"].items():
            conv(f"MobilenetEdgeTPU/{scope}/{part}", f"block{i}/{part}", p, None)
    conv("MobilenetEdgeTPU/Conv_1", "conv_last", params["conv_last"], None)
    w = rng.normal(size=(1, 1, *params["logits"]["kernel"].shape)).astype(np.float32)
    b = rng.normal(size=params["logits"]["bias"].shape).astype(np.float32)
    tf["MobilenetEdgeTPU/Logits/Conv2d_1c_1x1/weights"] = w
    tf["MobilenetEdgeTPU/Logits/Conv2d_1c_1x1/biases"] = expected["logits/bias"] = b
    expected["logits/kernel"] = w[0, 0]
    return tf, expected


def test_every_array_of_the_made_file_lands_where_slim_names_it(tmp_path):
    """Bites: block i read from `expanded_conv_<i>` (off by one: values from the next block),
    a depthwise kernel not transposed (wrong shape), gamma/beta swapped."""
    params, state = _abstract()
    tf, expected = _made_file(params, state)
    np.savez(tmp_path / "edgetpu.npz", **tf)
    new_p, new_s = convert.load_file(tmp_path / "edgetpu.npz", params, state)
    got = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(new_p)[0]:
        got["/".join(k.key for k in path)] = np.asarray(leaf)
    for path, leaf in jax.tree_util.tree_flatten_with_path(new_s["batch_stats"])[0]:
        keys = [k.key for k in path]
        got["/".join(keys[:-2] + ["stats", keys[-1]])] = np.asarray(leaf)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert len(expected) == len(tf)  # one TF array per leaf: the file is used entirely


def test_a_file_of_another_model_is_a_usage_error_naming_what_is_wrong(tmp_path):
    params, state = _abstract()
    tf, _ = _made_file(params, state)
    del tf["MobilenetEdgeTPU/expanded_conv_13/project/weights"]
    tf["MobilenetEdgeTPU/Conv/weights"] = np.zeros((3, 3, 3, 99), np.float32)
    with pytest.raises(UsageError, match="2 problems") as error:
        convert.load(tf, params, state)
    assert "missing MobilenetEdgeTPU/expanded_conv_13/project/weights" in str(error.value)
    assert "Conv/weights is (3, 3, 3, 99), the model wants (3, 3, 3, 8)" in str(error.value)
    with pytest.raises(UsageError, match="do not exist"):
        convert.load_file(tmp_path / "nope.pb", params, state)


@pytest.mark.slow
def test_model_checkpoint_makes_the_workload_start_from_the_file(tmp_path):
    """`model.checkpoint` of a mobilenet_edgetpu config: `init` returns the file's weights (the
    path `tpubench infer` takes for the published model). Bites: `init` ignoring the key.
    30 s on the loaded 2-core machine (the smoke model's eager init)."""
    from tpubench import config as config_lib
    from tpubench import registry

    cfg = config_lib.load("resnet", "mobilenet_edgetpu_smoke", {})
    workload = registry.create(cfg)
    params, state = jax.eval_shape(workload.init, jax.random.key(0))
    tf, expected = _made_file(nn.unbox(params), {"batch_stats": nn.unbox(state["batch_stats"])})
    np.savez(tmp_path / "w.npz", **tf)
    with cfg.unlocked():
        cfg.model.checkpoint = str(tmp_path / "w.npz")
    params, state = registry.create(cfg).init(jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(nn.unbox(params)["block2"]["expand"]["conv"][
        "kernel"]), expected["block2/expand/conv/kernel"])
    np.testing.assert_array_equal(np.asarray(state["batch_stats"]["stem"]["bn"]["var"]),
                                  expected["stem/stats/var"])
