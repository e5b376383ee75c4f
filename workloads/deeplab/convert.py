"""The published DeepLabv3+ MobileNetV2 weights (MLPerf mobile v0.7 `deeplabv3`) into this model.

Which file: mlcommons/mobile_open `vision/deeplab/models_and_code/checkpoints/float/` (the
`model.ckpt-200000` checkpoint and its frozen `freeze.pb`, mIoU 0.5528; `miou.txt` there). A
frozen graph keeps the variables' names on its `Const` nodes, so it is read without TensorFlow
(`workloads/ssd/convert_mobilenet.read_frozen_graph`); an .npz of the same names -> arrays
(e.g. written from the checkpoint by `tf.train.load_checkpoint`) reads the same way.

Names (the reference's scopes, `model.py` and slim `mobilenet.py`):
- backbone under `MobilenetV2/`: the stem `Conv`, block i `expanded_conv` (i = 1) or
  `expanded_conv_<i-1>` with `expand`, `depthwise`, `project` convs (no `Conv_1`: the backbone
  ends at layer_18);
- head: `image_pooling`, `aspp0`, `concat_projection`, `decoder/feature_projection0`,
  `decoder/decoder_conv{0,1}_{depthwise,pointwise}`, and `logits/semantic` (`weights` [1, 1,
  256, 32], `biases`).
Each conv has `weights` (HWIO, Flax's layout; a depthwise conv's `depthwise_weights` is [k, k, C,
1], Flax's [k, k, 1, C]) and `BatchNorm/{gamma, beta, moving_mean, moving_variance}`.

    params, model_state = load_file(PATH, params, model_state)   # shapes checked, all or nothing
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tpubench.errors import UsageError
from workloads.resnet.convert_mobilenet_edgetpu import _conv_bn
from workloads.ssd.convert import _put, _shape
from workloads.ssd.convert_mobilenet import read_frozen_graph

BACKBONE_SCOPE = "MobilenetV2"
LOGITS_SCOPE = "logits/semantic"


def tf_scope(module: str) -> str:
    """A head module's or a backbone module's name -> its TF scope."""
    if module == "stem":
        return f"{BACKBONE_SCOPE}/Conv"
    if module.startswith("block"):
        i = int(module.removeprefix("block"))
        return f"{BACKBONE_SCOPE}/expanded_conv" + ("" if i == 1 else f"_{i - 1}")
    if module.startswith(("feature_projection", "decoder_conv")):
        return f"decoder/{module}"
    return module  # image_pooling, aspp0, concat_projection


def load(weights: dict[str, np.ndarray], params: Any, model_state: Any) -> tuple[dict, dict]:
    """(params, model_state) of a `DeepLabV3Plus` from TF-named arrays; `UsageError` listing
    every missing or misshapen array (nothing is half-loaded)."""
    stats = model_state["batch_stats"]
    new_p, new_s, problems = {"backbone": {}}, {"backbone": {}}, []
    for module, p in params["backbone"].items():
        s, scope = stats["backbone"][module], tf_scope(module)
        if module == "stem":
            new_p["backbone"][module], new_s["backbone"][module] = _conv_bn(
                weights, scope, p, s, False, problems)
            continue
        new_p["backbone"][module], new_s["backbone"][module] = {}, {}
        for part, sub in p.items():
            new_p["backbone"][module][part], new_s["backbone"][module][part] = _conv_bn(
                weights, f"{scope}/{part}", sub, s[part], part == "depthwise", problems)
    for module, p in params.items():
        if module in ("backbone", "logits"):
            continue
        new_p[module], new_s[module] = _conv_bn(weights, tf_scope(module), p, stats[module],
                                                module.endswith("_depthwise"), problems)
    w, b = weights.get(f"{LOGITS_SCOPE}/weights"), weights.get(f"{LOGITS_SCOPE}/biases")
    p = params["logits"]
    if w is None or b is None:
        problems.append(f"missing {LOGITS_SCOPE}/weights or /biases")
    elif tuple(w.shape) != _shape(p["kernel"]) or tuple(b.shape) != _shape(p["bias"]):
        problems.append(f"{LOGITS_SCOPE} is {tuple(w.shape)}, the model wants "
                        f"{_shape(p['kernel'])}")
    else:
        new_p["logits"] = {"kernel": _put(p["kernel"], np.asarray(w, np.float32)),
                           "bias": _put(p["bias"], np.asarray(b, np.float32))}
    if problems:
        raise UsageError(f"The DeepLabv3+ weights do not fit this model ({len(problems)} "
                         f"problems; first: {'; '.join(problems[:3])}). Pass the MLPerf mobile "
                         "deeplabv3 frozen graph (32 classes) to the full-size config.")
    return new_p, {**model_state, "batch_stats": new_s}


def load_file(path: str | os.PathLike, params: Any, model_state: Any) -> tuple[dict, dict]:
    """`load` from a frozen graph (.pb) or an .npz of TF names."""
    if not os.path.exists(path):
        raise UsageError(f"DeepLabv3+ weights {os.fspath(path)!r} do not exist: pass the MLPerf "
                         "mobile deeplabv3 frozen graph (or an .npz of its names).")
    return load(read_frozen_graph(path), params, model_state)
