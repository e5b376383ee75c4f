"""MobileNet v1 and v2 feature extractors for SSD (`ssd-mobilenet`, `ssd-mobilenetv2`), Flax.

The bodies are the published architectures (`tpubench.nn.mobilenet`: its blocks and layer plans;
the tests compare the parameter counts of these modules with Keras's at width 1.0), returning
the maps SSD's heads read:
- v1: `Conv2d_11_pointwise` (19x19x512 at 300x300) and `Conv2d_13_pointwise` (10x10x1024):
  TF models/research/object_detection `ssd_mobilenet_v1_feature_extractor.py`.
- v2: `layer_15/expansion_output` (the 1x1 expansion of the first 160-channel block, 19x19x576)
  and `layer_19` (the 1280 conv, 10x10): `ssd_mobilenet_v2_feature_extractor.py`.
v2's last conv stays 1280 for width <= 1. `stem_stride` 1 (minis only) keeps small canvases at
twice the resolution. `TFExtraBlock` is the TF object-detection extra layer after the body.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from tpubench.nn.mobilenet import (
    BN_MOMENTUM,
    V1_PLAN,
    V2_PLAN,
    ConvBN,
    InvertedResidual,
    make_divisible,
)


class MobileNetV1(nn.Module):
    """`__call__(x, train)` -> [Conv2d_11_pointwise, Conv2d_13_pointwise] feature maps."""

    width: float = 1.0
    stem_stride: int = 2
    dtype: Any = jnp.float32
    bn_span: int = 0
    bn_momentum: float = BN_MOMENTUM
    depthwise_impl: str = "conv"

    @nn.compact
    def __call__(self, x, train: bool):
        cb = partial(ConvBN, dtype=self.dtype, bn_span=self.bn_span,
                     bn_momentum=self.bn_momentum, depthwise_impl=self.depthwise_impl)
        x = cb(int(32 * self.width), 3, self.stem_stride, name="Conv2d_0")(x, train)
        taps = []
        for i, (c, s) in enumerate(V1_PLAN, start=1):
            x = cb(x.shape[-1], 3, s, depthwise=True, name=f"Conv2d_{i}_depthwise")(x, train)
            x = cb(int(c * self.width), 1, name=f"Conv2d_{i}_pointwise")(x, train)
            if i in (11, 13):
                taps.append(x)
        return taps


class MobileNetV2(nn.Module):
    """`__call__(x, train)` -> [layer_15/expansion_output, layer_19] feature maps."""

    width: float = 1.0
    stem_stride: int = 2
    dtype: Any = jnp.float32
    bn_span: int = 0
    bn_momentum: float = BN_MOMENTUM
    depthwise_impl: str = "conv"
    plan: Sequence[Sequence[int]] = V2_PLAN

    @nn.compact
    def __call__(self, x, train: bool):
        cb = partial(ConvBN, dtype=self.dtype, bn_span=self.bn_span,
                     bn_momentum=self.bn_momentum, depthwise_impl=self.depthwise_impl)
        x = cb(make_divisible(32 * self.width), 3, self.stem_stride, name="stem")(x, train)
        taps, block = [], 0
        for t, c, n, s in self.plan:
            for j in range(n):
                block += 1
                x, expanded = InvertedResidual(
                    t, make_divisible(c * self.width), s if j == 0 else 1, dtype=self.dtype,
                    bn_span=self.bn_span, bn_momentum=self.bn_momentum,
                    depthwise_impl=self.depthwise_impl, name=f"block{block}")(x, train)
                if block == 14:  # TF's layer_15: the first 160-channel block (0 = the stem)
                    taps.append(expanded)
        last = make_divisible(1280 * self.width) if self.width > 1.0 else 1280
        taps.append(cb(last, 1, name="conv_last")(x, train))
        return taps


class TFExtraBlock(nn.Module):
    """The TF object-detection extra layer (`feature_map_generators`): 1x1 conv to `mid`,
    3x3 stride-2 SAME conv to `out`, each with BN + ReLU6 and no bias."""

    mid: int
    out: int
    dtype: Any = jnp.float32
    bn_span: int = 0
    bn_momentum: float = BN_MOMENTUM

    @nn.compact
    def __call__(self, x, train: bool):
        cb = partial(ConvBN, dtype=self.dtype, bn_span=self.bn_span,
                     bn_momentum=self.bn_momentum)
        x = cb(self.mid, 1, name="conv1")(x, train)
        return cb(self.out, 3, 2, name="conv2")(x, train)
