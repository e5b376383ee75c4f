"""MobileNet building blocks (v1's depthwise-separable convs, v2's inverted residuals) in Flax,
shared by SSD's MobileNet v1 / v2 feature extractors (`workloads/ssd/mobilenet.py`), DeepLabv3+'s
MobileNetV2 backbone (`workloads/deeplab/model.py`) and MobileNetEdgeTPU
(`workloads/resnet/mobilenet_edgetpu.py`).

Layer plans as the published architectures (Keras `tf.keras.applications.MobileNet` and
`MobileNetV2`):
- v1 (Howard et al. 2017, Table 1), `V1_PLAN`: after a 3x3 conv s2 (32), 13 depthwise-separable
  blocks (3x3 depthwise + BN + ReLU6, 1x1 pointwise + BN + ReLU6) of (channels, stride) 64,
  128 s2, 128, 256 s2, 256, 512 s2, 512 x5, 1024 s2, 1024.
- v2 (Sandler et al. 2018, Table 2), `V2_PLAN`: after a 3x3 conv s2 (32), inverted residual
  stages (expansion t, channels c, repeats n, stride s) (1,16,1,1) (6,24,2,2) (6,32,3,2)
  (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1), then a 1x1 conv to 1280.
Channels scale with a width multiplier as Keras's `_make_divisible(c * width, 8)`
(`make_divisible`; v1 uses int(c * width)).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from tpubench.nn import layers
from tpubench.nn.initializers import KAIMING

V1_PLAN = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
           (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))
V2_PLAN = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1))


def make_divisible(v: float, divisor: int = 8) -> int:
    """Keras applications' `_make_divisible`: round to a multiple of 8, never 10% below."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


# Keras applications' MobileNet / MobileNetV2 BatchNormalization: momentum 0.999, epsilon 1e-3
# (the full configs' `model.bn_momentum`; the TF object-detection pipeline that trained the
# v0.7 reference checkpoint, samples/configs/ssd_mobilenet_v1_coco.config, uses decay 0.9997,
# epsilon 0.001). The minis set 0.9 (workloads/ssd/configs/mobilenet_v2_mini.py says why).
BN_MOMENTUM = 0.999


def _norm(train: bool, dtype: Any, bn_span: int, momentum: float, epsilon: float = 1e-3):
    return partial(layers.BatchNorm, use_running_average=not train, span=bn_span,
                   momentum=momentum, epsilon=epsilon, dtype=dtype)


class DepthwiseShifts(nn.Module):
    """A depthwise conv (SAME padding, no bias) as k*k shifted multiply-adds: the same kernel
    ([k, k, 1, C], same init and name as nn.Conv's) and function as `nn.Conv(...,
    feature_group_count=C)` up to float rounding (tests/test_ssd_mobilenet.py). XLA:CPU
    lowers grouped convs slowly: one 3x3 depthwise layer of the v2 mini (batch 32, 64x64x48),
    forward + backward, ran about 5x longer as a grouped conv than as shifts (timed in one
    process on a loaded 2-core machine: a ratio, not a speed); the minis use this, the full
    configs the grouped conv."""

    kernel: int = 3
    strides: int = 1
    dtype: Any = jnp.float32
    dilation: int = 1  # atrous rate (DeepLab's output-stride-16 backbone)

    @nn.compact
    def __call__(self, x):
        c, k, s, d = x.shape[-1], self.kernel, self.strides, self.dilation
        w = self.param("kernel", KAIMING, (k, k, 1, c), jnp.float32).astype(self.dtype)
        x = x.astype(self.dtype)
        pads, outs = [], []
        for size in x.shape[1:3]:  # TF / XLA SAME: out = ceil(size / s), extra pad at the end
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
            outs.append(out)
        xp = jnp.pad(x, ((0, 0), *pads, (0, 0)))
        y, (h, v) = 0, ((outs[0] - 1) * s + 1, (outs[1] - 1) * s + 1)
        for i in range(k):
            for j in range(k):
                y = y + xp[:, i * d:i * d + h:s, j * d:j * d + v:s] * w[i, j, 0]
        return y


class ConvBN(nn.Module):
    """conv (no bias) -> BN -> ReLU6 (optional; `relu_cap` 0: plain ReLU, as MobileNetEdgeTPU);
    `groups` = channels for a depthwise conv, computed as a grouped conv (`depthwise_impl`
    "conv") or as shifts (`DepthwiseShifts`)."""

    filters: int
    kernel: int = 1
    strides: int = 1
    depthwise: bool = False
    relu: bool = True
    dtype: Any = jnp.float32
    bn_span: int = 0
    bn_momentum: float = BN_MOMENTUM
    depthwise_impl: str = "conv"
    relu_cap: float = 6.0
    dilation: int = 1
    epsilon: float = 1e-3  # DeepLab's head: 1e-5 (its own batch-norm params)

    @nn.compact
    def __call__(self, x, train: bool):
        groups = x.shape[-1] if self.depthwise else 1
        if self.depthwise and self.depthwise_impl == "shifts":
            x = DepthwiseShifts(self.kernel, self.strides, dtype=self.dtype,
                                dilation=self.dilation, name="conv")(x)
        else:
            x = nn.Conv(self.filters, (self.kernel,) * 2, (self.strides,) * 2, padding="SAME",
                        feature_group_count=groups, use_bias=False, dtype=self.dtype,
                        kernel_dilation=(self.dilation,) * 2,
                        kernel_init=KAIMING, name="conv")(x)
        x = _norm(train, self.dtype, self.bn_span, self.bn_momentum, self.epsilon)(name="bn")(x)
        if not self.relu:
            return x
        return jnp.minimum(nn.relu(x), self.relu_cap) if self.relu_cap else nn.relu(x)


class InvertedResidual(nn.Module):
    """1x1 expansion (to make_divisible(t * in), when that exceeds in) -> k x k depthwise
    (stride, atrous rate `dilation`) -> 1x1 linear projection, + input when the shapes allow and
    `residual`. Returns (output, expansion output), or (output, depthwise output) with
    `tap="depthwise"` (DeepLab's decoder reads TF's `layer_4/depthwise_output`).

    `fused` (MobileNetEdgeTPU's fused inverted bottleneck, TF-slim `mobilenet_v3.mbv3_fused`):
    the expansion is a regular k x k conv carrying the stride, and there is no depthwise conv
    (with t = 1 the block is the projection alone, as slim's `expanded_conv`). `relu_cap` 6
    (ReLU6, MobileNet v2) or 0 (ReLU, MobileNetEdgeTPU)."""

    expansion: float
    filters: int
    strides: int
    dtype: Any = jnp.float32
    bn_span: int = 0
    bn_momentum: float = BN_MOMENTUM
    depthwise_impl: str = "conv"
    kernel: int = 3
    fused: bool = False
    residual: bool = True
    relu_cap: float = 6.0
    dilation: int = 1
    tap: str = "expansion"

    @nn.compact
    def __call__(self, x, train: bool):
        cb = partial(ConvBN, dtype=self.dtype, bn_span=self.bn_span,
                     bn_momentum=self.bn_momentum, depthwise_impl=self.depthwise_impl,
                     relu_cap=self.relu_cap)
        y = x
        inner = make_divisible(x.shape[-1] * self.expansion)
        if inner > x.shape[-1]:
            k, s = (self.kernel, self.strides) if self.fused else (1, 1)
            y = cb(inner, k, s, name="expand")(y, train)
        expanded = y
        if not self.fused:
            y = cb(y.shape[-1], self.kernel, self.strides, depthwise=True,
                   dilation=self.dilation, name="depthwise")(y, train)
        tapped = y if self.tap == "depthwise" else expanded
        y = cb(self.filters, 1, relu=False, name="project")(y, train)
        if self.residual and self.strides == 1 and x.shape[-1] == self.filters:
            y = x + y
        return y, tapped
