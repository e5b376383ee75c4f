"""TF-slim MobileNet names -> this suite's ConvBN modules (`tpubench.nn.mobilenet`), shared
by the converters of the published MobileNetEdgeTPU (`workloads/resnet/
convert_mobilenet_edgetpu.py`) and DeepLabv3+ MobileNetV2 (`workloads/deeplab/convert.py`).

Slim scopes under a model's prefix: the stem `Conv`, block i `expanded_conv` (i = 1) or
`expanded_conv_<i-1>` with its `expand`, `depthwise` and `project` convs. Each conv has `weights`
(HWIO, Flax's layout; a depthwise conv's `depthwise_weights` is [k, k, C, 1], Flax's
[k, k, 1, C]) and `BatchNorm/{gamma, beta, moving_mean, moving_variance}`. Every function
appends what does not fit to `problems` (and keeps the model's value), so a converter reports
every missing or misshapen array at once and loads nothing unless all fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpubench.convert.boxed import put, shape


def backbone_scope(prefix: str, module: str) -> str:
    """`stem` -> `<prefix>/Conv`; `block<i>` -> `<prefix>/expanded_conv[_<i-1>]`."""
    if module == "stem":
        return f"{prefix}/Conv"
    i = int(module.removeprefix("block"))
    return f"{prefix}/expanded_conv" + ("" if i == 1 else f"_{i - 1}")


def conv_bn(weights: dict, scope: str, p: Any, s: Any, depthwise: bool, problems: list):
    """(params, batch stats) of one ConvBN module from the arrays under `scope`."""
    def take(name, like, transform=lambda a: a):
        if name not in weights:
            problems.append(f"missing {name}")
            return like
        value = transform(np.asarray(weights[name], np.float32))
        if tuple(value.shape) != shape(like):
            problems.append(f"{name} is {tuple(value.shape)}, the model wants {shape(like)}")
            return like
        return put(like, value)

    kernel_name = f"{scope}/depthwise_weights" if depthwise else f"{scope}/weights"
    transpose = (lambda a: a.transpose(0, 1, 3, 2)) if depthwise else (lambda a: a)
    bn = f"{scope}/BatchNorm"
    new_p = {"conv": {"kernel": take(kernel_name, p["conv"]["kernel"], transpose)},
             "bn": {"scale": take(f"{bn}/gamma", p["bn"]["scale"]),
                    "bias": take(f"{bn}/beta", p["bn"]["bias"])}}
    new_s = {"bn": {"mean": take(f"{bn}/moving_mean", s["bn"]["mean"]),
                    "var": take(f"{bn}/moving_variance", s["bn"]["var"])}}
    return new_p, new_s


def backbone_module(weights: dict, prefix: str, module: str, p: Any, s: Any, problems: list):
    """(params, batch stats) of the stem or of one inverted-residual block (each of its parts a
    ConvBN; `depthwise` is the depthwise one)."""
    scope = backbone_scope(prefix, module)
    if module == "stem":
        return conv_bn(weights, scope, p, s, False, problems)
    new_p, new_s = {}, {}
    for part, sub in p.items():
        new_p[part], new_s[part] = conv_bn(weights, f"{scope}/{part}", sub, s[part],
                                           part == "depthwise", problems)
    return new_p, new_s


def logits(weights: dict, scope: str, p: Any, problems: list) -> dict | None:
    """The classifier's `kernel` and `bias` from `<scope>/weights` and `/biases`: a 1x1 conv's
    [1, 1, in, out] weights, cut to the kernel's rank (a Dense kernel takes the last two axes);
    None when they are missing or do not fit."""
    w, b = weights.get(f"{scope}/weights"), weights.get(f"{scope}/biases")
    if w is None or b is None:
        problems.append(f"missing {scope}/weights or /biases")
        return None
    kernel = shape(p["kernel"])
    w = np.asarray(w, np.float32)
    w = w.reshape(w.shape[-len(kernel):])
    if tuple(w.shape) != kernel or tuple(b.shape) != shape(p["bias"]):
        problems.append(f"{scope} is {tuple(w.shape)}, the model wants {kernel}")
        return None
    return {"kernel": put(p["kernel"], w), "bias": put(p["bias"], np.asarray(b, np.float32))}
