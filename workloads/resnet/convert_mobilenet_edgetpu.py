"""The published MobileNetEdgeTPU weights (MLPerf Inference v0.7 mobile) into this model.

Which file: the MLPerf mobile v0.7 reference model is TF-slim's `mobilenet_edgetpu_224_1.0`
checkpoint (storage.googleapis.com/mobilenet_edgetpu/checkpoints/mobilenet_edgetpu_224_1.0.tgz,
linked from the tensorflow/models mobilenet README), frozen with its moving averages as
mlcommons/mobile_open `vision/mobilenet/models_and_code/checkpoints/float/edge_frozen_graph.pb`
(FP32 top-1 76.19%). Freezing keeps the variables' names on the `Const` nodes, so both read the
same way: a frozen graph (.pb, parsed without TensorFlow by `tpubench.convert.frozen_graph.
read_frozen_graph`) or an .npz of the same names -> arrays.

Names (TF-slim `mobilenet.py` scopes under `MobilenetEdgeTPU/`): the stem `Conv`, block i
`expanded_conv` (i = 1) or `expanded_conv_<i-1>` with `expand`, `depthwise` and `project`
convs, the last 1x1 conv `Conv_1`, the classifier `Logits/Conv2d_1c_1x1` (`weights` [1, 1,
1280, 1001], `biases`). Each conv has `weights` (HWIO, Flax's layout; a depthwise conv's
`depthwise_weights` is [k, k, C, 1], Flax's [k, k, 1, C]) and `BatchNorm/{gamma, beta,
moving_mean, moving_variance}` (slim epsilon 0.001, as `ConvBN`'s).

    params, model_state = load_file(PATH, params, model_state)   # shapes checked, all or nothing
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tpubench.convert import slim
from tpubench.convert.frozen_graph import read_frozen_graph
from tpubench.errors import UsageError

SCOPE = "MobilenetEdgeTPU"


def tf_scope(module: str) -> str:
    """Our top-level module name -> its TF-slim scope (`block3` -> `expanded_conv_2`)."""
    if module == "conv_last":
        return f"{SCOPE}/Conv_1"
    if module == "logits":
        return f"{SCOPE}/Logits/Conv2d_1c_1x1"
    return slim.backbone_scope(SCOPE, module)


def load(weights: dict[str, np.ndarray], params: Any, model_state: Any) -> tuple[dict, dict]:
    """(params, model_state) of a `MobileNetEdgeTPU` from TF-named arrays; `UsageError`
    listing every missing or misshapen array (nothing is half-loaded)."""
    stats = model_state["batch_stats"]
    new_p, new_s, problems = {}, {}, []
    for module, p in params.items():
        if module == "logits":
            new_p[module] = slim.logits(weights, tf_scope(module), p, problems)
        elif module == "conv_last":
            new_p[module], new_s[module] = slim.conv_bn(weights, tf_scope(module), p,
                                                        stats[module], False, problems)
        else:
            new_p[module], new_s[module] = slim.backbone_module(weights, SCOPE, module, p,
                                                                stats[module], problems)
    if problems:
        raise UsageError(f"The MobileNetEdgeTPU weights do not fit this model ({len(problems)} "
                         f"problems; first: {'; '.join(problems[:3])}). Pass the "
                         "mobilenet_edgetpu_224_1.0 frozen graph to the full-size config.")
    return new_p, {**model_state, "batch_stats": new_s}


def load_file(path: str | os.PathLike, params: Any, model_state: Any) -> tuple[dict, dict]:
    """`load` from a frozen graph (.pb) or an .npz of TF names."""
    if not os.path.exists(path):
        raise UsageError(f"MobileNetEdgeTPU weights {os.fspath(path)!r} do not exist: pass the "
                         "frozen graph of mobilenet_edgetpu_224_1.0 (or an .npz of its names).")
    return load(read_frozen_graph(path), params, model_state)
