"""Made TF-slim weights for the converter tests (MobileNetEdgeTPU, DeepLab): names written out
from the reference's scopes, not from the converter, each array from its own draw."""

from __future__ import annotations

import numpy as np


def slim_blocks(count: int) -> list[str]:
    """The slim scopes of inverted-residual blocks 1..count: expanded_conv, expanded_conv_1..."""
    return ["expanded_conv"] + [f"expanded_conv_{i}" for i in range(1, count)]


def add_conv_bn(rng, tf: dict, expected: dict, scope: str, ours: str, p) -> None:
    """One ConvBN's arrays in TF layouts into `tf` (by TF name), and the Flax value each must
    load as into `expected` (by our path: `<ours>/conv/kernel`, `/bn/...`, `/stats/...`)."""
    kernel = p["conv"]["kernel"].shape
    if "depthwise" in ours:  # Flax [k, k, 1, C]; TF [k, k, C, 1]
        w = rng.normal(size=(kernel[0], kernel[1], kernel[3], 1)).astype(np.float32)
        tf[f"{scope}/depthwise_weights"] = w
        expected[f"{ours}/conv/kernel"] = w.transpose(0, 1, 3, 2)
    else:
        w = rng.normal(size=kernel).astype(np.float32)
        tf[f"{scope}/weights"] = expected[f"{ours}/conv/kernel"] = w
    for tf_name, our in (("gamma", "bn/scale"), ("beta", "bn/bias"),
                         ("moving_mean", "stats/mean"), ("moving_variance", "stats/var")):
        tf[f"{scope}/BatchNorm/{tf_name}"] = expected[f"{ours}/{our}"] = rng.uniform(
            0.5, 2.0, size=p["bn"]["scale"].shape).astype(np.float32)
