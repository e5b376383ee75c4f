"""The published DeepLabv3+ MobileNetV2 weights (MLPerf mobile v0.7 `deeplabv3`) into this model.

Which file: mlcommons/mobile_open `vision/deeplab/models_and_code/checkpoints/float/` (the
`model.ckpt-200000` checkpoint and its frozen `freeze.pb`, mIoU 0.5528; `miou.txt` there). A
frozen graph keeps the variables' names on its `Const` nodes, so it is read without TensorFlow
(`tpubench.convert.frozen_graph.read_frozen_graph`); an .npz of the same names -> arrays
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

from tpubench.convert import slim
from tpubench.convert.frozen_graph import read_frozen_graph
from tpubench.errors import UsageError

BACKBONE_SCOPE = "MobilenetV2"
LOGITS_SCOPE = "logits/semantic"


def tf_scope(module: str) -> str:
    """A head module's or a backbone module's name -> its TF scope."""
    if module == "stem" or module.startswith("block"):
        return slim.backbone_scope(BACKBONE_SCOPE, module)
    if module.startswith(("feature_projection", "decoder_conv")):
        return f"decoder/{module}"
    return module  # image_pooling, aspp0, concat_projection


def load(weights: dict[str, np.ndarray], params: Any, model_state: Any) -> tuple[dict, dict]:
    """(params, model_state) of a `DeepLabV3Plus` from TF-named arrays; `UsageError` listing
    every missing or misshapen array (nothing is half-loaded)."""
    stats = model_state["batch_stats"]
    new_p, new_s, problems = {"backbone": {}}, {"backbone": {}}, []
    for module, p in params["backbone"].items():
        new_p["backbone"][module], new_s["backbone"][module] = slim.backbone_module(
            weights, BACKBONE_SCOPE, module, p, stats["backbone"][module], problems)
    for module, p in params.items():
        if module in ("backbone", "logits"):
            continue
        new_p[module], new_s[module] = slim.conv_bn(weights, tf_scope(module), p, stats[module],
                                                    module.endswith("_depthwise"), problems)
    new_p["logits"] = slim.logits(weights, LOGITS_SCOPE, params["logits"], problems)
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
