"""The published `ssd-mobilenet` weights (MLPerf Inference v0.7) from the reference's format.

Which file: the v0.7 reference (mlcommons/inference vision/classification_and_detection,
README "Supported Models", profile `ssd-mobilenet-tf` in python/main.py) serves TF
object-detection's `ssd_mobilenet_v1_coco_2018_01_28` frozen graph (`frozen_inference_graph.pb`,
mAP 0.23); its ONNX file is that graph through tf2onnx, and its PyTorch file
(`ssd_mobilenet_v1.pytorch`) is that graph's constants renamed by
python/models/convert_tf_weights.py. tpubench reads the frozen graph's `Const` nodes (GraphDef
parsed with TensorBoard's copy of the TF protos: no TensorFlow import), or an `.npz` of the
same names -> arrays.

Names, by the reference's own rules (convert_tf_weights.py `remap_tf_base_names`,
`remap_tf_extras`, `remap_tf_predictors`), which the reference's PyTorch model
(python/models/ssd_mobilenet_v1.py) then loads:
- backbone convs: under `FeatureExtractor/MobilenetV1`, `Conv2d_<n>` (n = 0 the stem,
  `_depthwise` / `_pointwise` for 1-13), no `batchnorm`, no `pointwise_`: kernels HWIO
  (Flax's layout), depthwise [3, 3, C, 1] (Flax: [3, 3, 1, C]).
- backbone batch norms: under `FeatureExtractor/MobilenetV1/MobilenetV1`, with `batchnorm`:
  `mul` a scale, else a bias. The stem's and the pointwise convs' norms are folded into the
  kernel (a bias only: the reference's `BiasAdd`); the depthwise ones keep a scale and a bias
  (its `BatchNorm2d`).
- extra blocks: `..._pointwise_<j>_Conv2d_<n>_<k>x<k>_...`: block n - 2, the 1x1 (k = 1) or
  the 3x3 stride-2 conv, kernel (`weight` in the name) or bias (BN folded).
- box predictors: `BoxPredictor_<k>/BoxEncodingPredictor` (loc) and `/ClassPredictor` (conf),
  `weights` or bias; 1x1 kernels.

Into this model (workloads/ssd/mobilenet.py, conv -> BN -> ReLU6 everywhere): a folded norm
becomes BN scale 1 (or the file's scale), bias b, mean 0, variance 1 - epsilon, i.e. exactly
x * scale + b. The box predictors' channels are anchor-major (channel = anchor * width + k,
TF's box codes (ty, tx, th, tw)); this model's are coordinate-major with codes (tx, ty, tw, th)
and the same 10/10/5/5 scaling (tpubench.detection.boxes), so they are permuted.

What does not carry over (so a converted whole model is NOT the reference's detector): TF's
default boxes (`ssd_anchor_generator`, 3 on the 19x19 map) are not this model's (the PyTorch
training reference's generator, 4 there: configs/mobilenet_v1.py), and TF scores classes
with a sigmoid over 91 labels where this model uses a softmax. `load_feature_extractor`
(config `model.backbone_checkpoint`) loads the backbone and extra blocks, which compute the
same function as the reference's; `load_ssd_mobilenet` (`model.checkpoint`) also loads the
box predictors, and refuses a model whose head shapes differ from the file's.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from tpubench.convert.boxed import Loader, put, shape
from tpubench.convert.frozen_graph import read_frozen_graph
from tpubench.errors import UsageError

PREFIX = "FeatureExtractor/MobilenetV1"
_CONV = re.compile(r"(.*)Conv2d_(\d+)")
_EXTRA = re.compile(r"(.*)Conv2d_(\d+)_(\d)x(\d)")
_HEAD = re.compile(r"BoxPredictor_(\d+)/(BoxEncodingPredictor|ClassPredictor)/")
EPSILON = 1e-3  # tpubench.nn.mobilenet.ConvBN's BN epsilon (TF OD: 0.001)


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """`read_frozen_graph` of the reference's weights, or a UsageError naming them when `path`
    does not exist."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UsageError(f"SSD-MobileNet weights {path!r} do not exist. Pass the reference's "
                         "ssd_mobilenet_v1_coco_2018_01_28/frozen_inference_graph.pb (or an .npz "
                         "of its constants' names) with --config.model.checkpoint=FILE.")
    return read_frozen_graph(path)


def reference_names(consts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The constants renamed as the reference's PyTorch model names them (convert_tf_weights.py):
    `backbone.<n>.{0,depthwise,pointwise}.weight`, `backbone.<n>.<conv>/BatchNorm.{scale,bias}`,
    `extras.<i>.{0,2}.{weight,bias}`, `predictors.<k>.{regression,classification}.{weight,bias}`;
    arrays stay in TF's layout. Constants of no layer (the post-processing's) are dropped."""
    out = {}
    for k, v in consts.items():
        if PREFIX in k and "pointwise_" in k:
            m = _EXTRA.match(k)
            if m:
                pos = 0 if int(m.group(3)) == 1 else 2
                kind = "weight" if "weight" in k else "bias"
                out[f"extras.{int(m.group(2)) - 2}.{pos}.{kind}"] = v
        elif PREFIX + "/MobilenetV1" in k and "batchnorm" in k:
            m = _CONV.match(k)
            if m:
                layer = m.group(2)
                name = "0" if layer == "0" else ("pointwise" if "pointwise" in k else "depthwise")
                out[f"backbone.{layer}.{name}/BatchNorm.{'scale' if 'mul' in k else 'bias'}"] = v
        elif PREFIX in k and "batchnorm" not in k:
            m = _CONV.match(k)
            if m:
                layer = m.group(2)
                name = "0" if layer == "0" else ("pointwise" if "pointwise" in k else "depthwise")
                out[f"backbone.{layer}.{name}.weight"] = v
        elif k.startswith("BoxPredictor_"):
            m = _HEAD.match(k)
            if m:
                head = "regression" if m.group(2) == "BoxEncodingPredictor" else "classification"
                out[f"predictors.{m.group(1)}.{head}.{'weight' if 'weights' in k else 'bias'}"] = v
    return out


class _Loader(Loader):
    """`tpubench.convert.boxed.Loader` with SSD-MobileNet's ConvBN modules and its message."""

    def conv_bn(self, p: Any, s: Any, conv: str, norm: str, depthwise: bool = False):
        """One ConvBN module (conv, bn) from a conv kernel and its folded or kept norm."""
        kernel = self.take(conv, p["conv"]["kernel"],
                           (lambda a: a.transpose(0, 1, 3, 2)) if depthwise else (lambda a: a))
        scale = self.take(f"{norm}.scale", p["bn"]["scale"], optional=None if depthwise else 1.0)
        bias = self.take(f"{norm}.bias", p["bn"]["bias"])
        stats = {"mean": put(s["bn"]["mean"], np.zeros(shape(s["bn"]["mean"]), np.float32)),
                 "var": put(s["bn"]["var"],
                             np.full(shape(s["bn"]["var"]), 1.0 - EPSILON, np.float32))}
        return {"conv": {"kernel": kernel}, "bn": {"scale": scale, "bias": bias}}, {"bn": stats}

    def raise_if_bad(self, what: str, hint: str) -> None:
        if self.missing or self.wrong:
            raise UsageError(
                f"The SSD-MobileNet file does not match this model's {what}: "
                + self.problems() + hint)


def _extras(params: Any) -> list[str]:
    return sorted((k for k in params if re.fullmatch(r"extra\d+", k)), key=lambda k: int(k[5:]))


def load_feature_extractor(consts: dict[str, np.ndarray], params: Any, batch_stats: Any,
                           loader: _Loader | None = None) -> tuple[dict, dict]:
    """New (params, batch_stats) with the backbone and extra blocks from the frozen graph's
    constants (`read_checkpoint`); the heads keep their values. Width-1.0 MobileNet v1 only
    in practice (any width whose shapes match the file). UsageError naming what does not fit."""
    ld = loader or _Loader(reference_names(consts))
    bp, bs = params["backbone"], batch_stats["backbone"]
    new_p, new_s = {}, {}
    for mod in bp:
        m = re.fullmatch(r"Conv2d_(\d+)(?:_(depthwise|pointwise))?", mod)
        if not m:
            raise UsageError(f"SSD-MobileNet weights: backbone module {mod!r} is not MobileNet "
                             "v1's (the reference ships v1 only; use --config=mobilenet_v1).")
        n, kind = m.group(1), m.group(2) or "0"
        new_p[mod], new_s[mod] = ld.conv_bn(bp[mod], bs[mod], f"backbone.{n}.{kind}.weight",
                                            f"backbone.{n}.{kind}/BatchNorm",
                                            depthwise=kind == "depthwise")
    out_p, out_s = {**params, "backbone": new_p}, {**batch_stats, "backbone": new_s}
    for i, mod in enumerate(_extras(params)):
        out_p[mod], out_s[mod] = {}, {}
        for sub, pos in (("conv1", 0), ("conv2", 2)):
            sp, ss = ld.conv_bn(params[mod][sub], batch_stats[mod][sub],
                                f"extras.{i}.{pos}.weight", f"extras.{i}.{pos}")
            out_p[mod][sub], out_s[mod][sub] = sp, ss
    if loader is None:
        ld.raise_if_bad("backbone and extra blocks", "pass the reference's "
                        "ssd_mobilenet_v1_coco_2018_01_28 frozen graph with --config=mobilenet_v1.")
    return out_p, out_s


def _head(ld: _Loader, p: Any, name: str, width: int) -> dict:
    """A 1x1 box-predictor conv: TF channel anchor * width + k -> ours k * boxes + anchor
    (and box codes ty, tx, th, tw -> tx, ty, tw, th for the regression)."""
    order = [1, 0, 3, 2] if width == 4 else list(range(width))

    def permute(a):
        boxes = a.shape[-1] // width
        a = a.reshape(*a.shape[:-1], boxes, width)[..., order]
        return np.swapaxes(a, -1, -2).reshape(*a.shape[:-2], boxes * width)

    return {"kernel": ld.take(f"{name}.weight", p["kernel"], permute),
            "bias": ld.take(f"{name}.bias", p["bias"], permute)}


def load_ssd_mobilenet(consts: dict[str, np.ndarray], params: Any, batch_stats: Any,
                       ) -> tuple[dict, dict]:
    """The whole model: `load_feature_extractor` plus the six box predictors. The model's
    heads must have the file's shapes (TF: 3 then 6 boxes per cell, 91 labels); the shipped
    configs do not (see the module docstring), so for them this is a UsageError that says to
    load the feature extractor alone."""
    ld = _Loader(reference_names(consts))
    out_p, out_s = load_feature_extractor(consts, params, batch_stats, loader=ld)
    classes = None
    for k in range(sum(1 for n in params if re.fullmatch(r"loc\d+", n))):
        boxes = shape(params[f"loc{k}"]["kernel"])[-1] // 4
        classes = shape(params[f"conf{k}"]["kernel"])[-1] // boxes
        out_p[f"loc{k}"] = _head(ld, params[f"loc{k}"], f"predictors.{k}.regression", 4)
        out_p[f"conf{k}"] = _head(ld, params[f"conf{k}"], f"predictors.{k}.classification",
                                  classes)
    heads_bad = any(n.startswith("predictors.") for n in ld.missing + ld.wrong)
    ld.raise_if_bad(
        f"layers (its heads: {classes} labels)",
        "pass the reference's ssd_mobilenet_v1_coco_2018_01_28 frozen graph with "
        "--config=mobilenet_v1." if not heads_bad else
        "the reference's box predictors have 3 boxes per cell on the first map, 6 on the "
        "others, and 91 labels; configs/mobilenet_v1.py has 4 on the first and 81 labels, so "
        "load the backbone and extra blocks alone with --config.model.backbone_checkpoint=FILE.")
    return out_p, out_s
