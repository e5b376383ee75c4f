"""The Mask R-CNN reference's backbone file: the MSRA ResNet-50 in Caffe2's pickle (R-50.pkl).

The v0.7 reference (mlcommons/training object_detection/pytorch) starts from
`MODEL.WEIGHT: "catalog://ImageNetPretrained/MSRA/R-50"` (configs/e2e_mask_rcnn_R_50_FPN_1x.yaml),
Detectron's ImageNet/R-50.pkl, read by maskrcnn_benchmark/utils/c2_model_loading.py
(`_load_c2_pickled_weights`: `pickle.load(f, encoding="latin1")`, the dict under "blobs" if
present; `_rename_basic_resnet_weights` maps the names). Its blobs:

    conv1_w                          [64, 3, 7, 7]   the stem conv (BGR input, 0-255 minus mean)
    res_conv1_bn_{s,b}               [64]            the stem's affine channel (scale, bias)
    res{2..5}_{j}_branch2{a,b,c}_w   [out, in, h, w] block j's 1x1 (stride here), 3x3, 1x1
    res{2..5}_{j}_branch2{a,b,c}_bn_{s,b}            their affine channels
    res{2..5}_0_branch1_w, ..._bn_{s,b}              the projection shortcut
    fc1000_{w,b}, *_momentum                         the classifier and solver state: unused

An affine channel has no statistics: the reference loads `s` and `b` as FrozenBatchNorm2d's
`weight` and `bias` and keeps its default `running_mean` 0 and `running_var` 1
(layers/batch_norm.py), so y = x * s + b. `torchvision_state` renames the blobs to the
torchvision state-dict names that `tpubench.convert.torchvision.load_backbone` reads (resN ->
layer{N-1}, branch2a/2b/2c -> conv1/2/3 and bn1/2/3, branch1 -> downsample.0/1), with those
statistics; the model (`model.stride_in_1x1`, BGR 0-255 inputs) is the MSRA network itself.
"""

from __future__ import annotations

import os
import pickle
import re
from typing import Any

import numpy as np

from tpubench.convert import torchvision
from tpubench.errors import UsageError

SUFFIX = ".pkl"  # `model.backbone_checkpoint` ending so is read as this format
_BLOCK = re.compile(r"res([2-5])_(\d+)_branch(2a|2b|2c|1)_(w|bn_s|bn_b)")
_CONV = {"2a": "conv1", "2b": "conv2", "2c": "conv3", "1": "downsample.0"}
_NORM = {"2a": "bn1", "2b": "bn2", "2c": "bn3", "1": "downsample.1"}
_PART = {"w": "weight", "bn_s": "weight", "bn_b": "bias"}
_UNUSED = re.compile(r"fc1000_[wb]|pred_[wb]|.*_momentum")
HOW = ("Pass Detectron's MSRA ImageNet R-50.pkl (the file maskrcnn_benchmark's catalog "
       "ImageNetPretrained/MSRA/R-50 downloads: https://dl.fbaipublicfiles.com/detectron/"
       "ImageNetPretrained/MSRA/R-50.pkl) as --config.model.backbone_checkpoint=R-50.pkl.")


def is_msra(path: str) -> bool:
    """Whether a `model.backbone_checkpoint` names the reference's Caffe2 pickle."""
    return str(path).endswith(SUFFIX)


def read_blobs(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """name -> array of a Caffe2 weights pickle (its "blobs" dict when it has one)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UsageError(f"Backbone file {path!r} does not exist. {HOW}")
    try:
        with open(path, "rb") as f:
            data = pickle.load(f, encoding="latin1")
    except (pickle.UnpicklingError, EOFError, ValueError) as e:
        raise UsageError(f"{path!r} is not a Caffe2 weights pickle ({e}). {HOW}") from e
    blobs = data.get("blobs", data) if isinstance(data, dict) else None
    if not isinstance(blobs, dict):
        raise UsageError(f"{path!r} holds no dict of blobs. {HOW}")
    return {str(k): np.asarray(v) for k, v in blobs.items()}


def torchvision_state(blobs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The blobs under torchvision's ResNet-50 state-dict names, each norm with mean 0 and
    variance 1; `UsageError` naming any blob that is none of the MSRA R-50's."""
    out: dict[str, np.ndarray] = {}
    unknown = []
    for name, value in blobs.items():
        if _UNUSED.fullmatch(name):
            continue
        if name == "conv1_w":
            out["conv1.weight"] = value
        elif name in ("res_conv1_bn_s", "res_conv1_bn_b"):
            out["bn1." + _PART[name[-4:]]] = value
        elif m := _BLOCK.fullmatch(name):
            stage, block, branch, part = m.groups()
            module = (_CONV if part == "w" else _NORM)[branch]
            out[f"layer{int(stage) - 1}.{block}.{module}.{_PART[part]}"] = value
        else:
            unknown.append(name)
    if unknown:
        raise UsageError(f"The backbone pickle has blobs that are not the MSRA R-50's: "
                         f"{sorted(unknown)[:8]}. {HOW}")
    for key in [k for k in out if k.endswith(".bias")]:  # only the norms have a bias here
        prefix = key[:-len(".bias")]
        out[f"{prefix}.running_mean"] = np.zeros_like(out[key])
        out[f"{prefix}.running_var"] = np.ones_like(out[key])
    return out


def load_backbone_file(path: str | os.PathLike, params: Any, model_state: Any
                       ) -> tuple[dict, dict]:
    """(params, model_state) with the backbone from the MSRA pickle at `path`, the rest as
    given (as `tpubench.convert.torchvision.load_backbone_file` for a torchvision file)."""
    try:
        new_p, new_s = torchvision.load_backbone(
            torchvision_state(read_blobs(path)), params["backbone"],
            model_state["batch_stats"]["backbone"], "resnet50")
    except UsageError as e:
        raise UsageError(f"{e} (read as the MSRA Caffe2 pickle {os.fspath(path)!r}: {HOW})"
                         ) from e
    return ({**params, "backbone": new_p},
            {**model_state, "batch_stats": {**model_state["batch_stats"], "backbone": new_s}})
