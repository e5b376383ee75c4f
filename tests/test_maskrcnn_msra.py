"""The Mask R-CNN reference's backbone file (workloads/maskrcnn/msra.py): Detectron's MSRA R-50
Caffe2 pickle, read into the model. The test writes a pickle in that format for the smoke
config's small ResNet (blob names as maskrcnn_benchmark/utils/c2_model_loading.py
`_rename_basic_resnet_weights` reads them, mlcommons/training v0.7 object_detection/pytorch)."""

from __future__ import annotations

import pickle

import jax
import numpy as np
import pytest
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.loops import lifecycle

# The test's own inverse of the MSRA naming: model module -> Caffe2 branch.
_BRANCH = {"conv1": "branch2a", "conv2": "branch2b", "conv3": "branch2c",
           "downsample_conv": "branch1", "bn1": "branch2a_bn", "bn2": "branch2b_bn",
           "bn3": "branch2c_bn", "downsample_bn": "branch1_bn"}


def _msra_blobs(backbone) -> dict[str, np.ndarray]:
    """Random blobs named and shaped as the MSRA pickle's for the model's backbone tree, plus
    the classifier and a solver-state blob the reference skips."""
    rng = np.random.default_rng(0)
    blobs = {}

    def put(name, leaf, kernel=False):
        shape = leaf.shape if not kernel else (leaf.shape[3], leaf.shape[2], *leaf.shape[:2])
        blobs[name] = rng.normal(size=shape).astype(np.float32)

    for top, sub in backbone.items():
        if top == "conv1":
            put("conv1_w", sub["kernel"], kernel=True)
        elif top == "bn1":
            put("res_conv1_bn_s", sub["scale"])
            put("res_conv1_bn_b", sub["bias"])
        else:
            stage, block = top[len("layer"):].split("_")
            base = f"res{int(stage) + 1}_{block}_"
            for module, leaves in sub.items():
                branch = _BRANCH[module]
                if "kernel" in leaves:
                    put(f"{base}{branch}_w", leaves["kernel"], kernel=True)
                else:
                    put(f"{base}{branch}_s", leaves["scale"])
                    put(f"{base}{branch}_b", leaves["bias"])
    blobs["fc1000_w"] = np.zeros((1000, 16), np.float32)
    blobs["fc1000_b"] = np.zeros((1000,), np.float32)
    blobs["res2_0_branch2a_w_momentum"] = np.zeros((1,), np.float32)
    return blobs


def _write(path, blobs):
    with open(path, "wb") as f:
        pickle.dump({"blobs": blobs}, f, protocol=2)  # Detectron's files are Python 2 pickles


@pytest.fixture(scope="module")
def smoke_backbone():
    w = registry.create(config_lib.load("maskrcnn", "smoke"))
    params, _ = jax.eval_shape(w.init, jax.random.PRNGKey(0))
    return nn.meta.unbox(params)["backbone"]


def test_the_msra_pickle_loads_every_backbone_weight_with_frozen_unit_statistics(
        tmp_path, smoke_backbone):
    """Each conv kernel is its blob from [out, in, h, w] to [h, w, in, out]; each affine
    channel's s and b are the frozen norm's scale and bias with mean 0 and variance 1 (the
    reference's FrozenBatchNorm2d defaults, layers/batch_norm.py), so y = x * s + b. Bites:
    branch2a/2c swapped, res{N} -> layer{N} (not N-1), the kernel untransposed, or statistics
    left at init."""
    blobs = _msra_blobs(smoke_backbone)
    _write(tmp_path / "R-50.pkl", blobs)
    c = config_lib.load("maskrcnn", "smoke", {"model.backbone_checkpoint":
                                              str(tmp_path / "R-50.pkl")})
    w = registry.create(c)
    w.check_data()
    params, state = jax.jit(w.init)(jax.random.PRNGKey(0))
    bb, stats = nn.meta.unbox(params)["backbone"], state["batch_stats"]["backbone"]
    np.testing.assert_array_equal(bb["conv1"]["kernel"], blobs["conv1_w"].transpose(2, 3, 1, 0))
    np.testing.assert_array_equal(bb["bn1"]["scale"], blobs["res_conv1_bn_s"])
    for layer in (1, 4):
        block = bb[f"layer{layer}_0"]
        c2 = f"res{layer + 1}_0_"
        np.testing.assert_array_equal(block["conv1"]["kernel"],
                                      blobs[c2 + "branch2a_w"].transpose(2, 3, 1, 0))
        np.testing.assert_array_equal(block["conv3"]["kernel"],
                                      blobs[c2 + "branch2c_w"].transpose(2, 3, 1, 0))
        np.testing.assert_array_equal(block["downsample_conv"]["kernel"],
                                      blobs[c2 + "branch1_w"].transpose(2, 3, 1, 0))
        np.testing.assert_array_equal(block["bn2"]["bias"], blobs[c2 + "branch2b_bn_b"])
        np.testing.assert_array_equal(block["downsample_bn"]["scale"], blobs[c2 + "branch1_bn_s"])
        for norm in ("bn1", "bn2", "bn3", "downsample_bn"):
            np.testing.assert_array_equal(stats[f"layer{layer}_0"][norm]["mean"], 0.0)
            np.testing.assert_array_equal(stats[f"layer{layer}_0"][norm]["var"], 1.0)


def test_a_pickle_that_is_not_the_msra_r50s_is_refused_naming_the_blob(tmp_path, smoke_backbone):
    """A blob of another network (unknown name) or a missing one stops the run before compute,
    naming it. Bites: silently skipping what does not map (a backbone half at init)."""
    blobs = _msra_blobs(smoke_backbone)
    _write(tmp_path / "extra.pkl", {**blobs, "res6_0_branch2a_w": np.zeros(1, np.float32)})
    _write(tmp_path / "short.pkl", {k: v for k, v in blobs.items() if k != "res3_0_branch2b_w"})
    for name, said in (("extra.pkl", "res6_0_branch2a_w"), ("short.pkl", "layer2.0.conv2")):
        c = config_lib.load("maskrcnn", "smoke", {"model.backbone_checkpoint":
                                                  str(tmp_path / name)})
        with pytest.raises(UsageError, match=said):
            registry.create(c).init(jax.random.PRNGKey(0))


def test_only_the_msra_pickle_keeps_a_full_run_closed():
    """maskrcnn_benchmark MODEL.WEIGHT catalog://ImageNetPretrained/MSRA/R-50: the full config
    with R-50.pkl passes the closed check; with a torchvision file or none it is refused, naming
    the file to get. Bites: any backbone accepted for closed."""
    ok = config_lib.load("maskrcnn", "full", {"model.backbone_checkpoint": "/w/R-50.pkl"})
    lifecycle.check_closed(registry.create(ok))
    for path in ("/w/resnet50.npz", ""):
        c = config_lib.load("maskrcnn", "full", {"model.backbone_checkpoint": path})
        assert c.is_mlperf
        with pytest.raises(UsageError, match="R-50.pkl"):
            lifecycle.check_closed(registry.create(c))
