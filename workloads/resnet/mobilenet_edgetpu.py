"""MobileNetEdgeTPU (MLPerf Inference v0.7 mobile `mobilenet-edgetpu`), Flax.

The published architecture: TF models `research/slim/nets/mobilenet/mobilenet_v3.py`
`V3_EDGETPU` (the `edge_tpu` builder, scope `MobilenetEdgeTPU`, 224x224, 1001 classes with
class 0 the background), whose `mobilenet_edgetpu_224_1.0` checkpoint the MLPerf mobile v0.7
reference (mlcommons/mobile_open `vision/mobilenet`, FP32 top-1 76.19%) was frozen from:
- stem: 3x3 conv stride 2 to 32, BN, ReLU;
- 9 fused inverted bottlenecks (`mbv3_fused`: the expansion is a regular 3x3 conv carrying the
  stride, no depthwise conv): (t, c, s) = (1,16,1) (8,32,2) (4,32,1)x3 (8,48,2) (4,48,1)x3;
- 13 depthwise inverted bottlenecks (`mbv3_op`: 1x1 expansion, k x k depthwise, 1x1 linear
  projection): (8,96,2,k3) (4,96,1,k3)x3 (8,96,1,k3, no residual) (4,96,1,k3)x3
  (8,160,2,k5) (4,160,1,k5)x3 (8,192,1,k3);
- 1x1 conv to 1280, BN, ReLU; global average pool; 1x1 conv (with bias) to the classes.
Every conv but the logits has no bias and a batch norm (slim `DEFAULTS`: center and scale);
activations are ReLU (no ReLU6, no hard-swish, no squeeze-excite); expansion widths are
`_make_divisible(t * in, 8)`; a block adds its input when stride 1 and channels match (and
`residual` is set). The tensorflow/models README lists this checkpoint as 990 M MACs and
4.0 M parameters (`MobilenetEdgeTPU dm=1`); tests/test_mobilenet_edgetpu.py counts ours.

The blocks are the shared MobileNet ones (`tpubench.nn.mobilenet` `ConvBN`, `InvertedResidual`,
with `fused`, `kernel`, `residual` and `relu_cap=0`). Small variants (the minis) scale the
channels with `width` (slim's `depth_multiplier`: `_make_divisible(c * width, 8)`), may cut the
plan (`blocks`) and take a stride-1 stem for small images.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from tpubench.nn.mobilenet import ConvBN, InvertedResidual, make_divisible

# (fused, expansion t, channels c, stride s, kernel k, residual) per block, as V3_EDGETPU.
EDGETPU_PLAN = (
    (True, 1, 16, 1, 3, True),
    (True, 8, 32, 2, 3, True), *[(True, 4, 32, 1, 3, True)] * 3,
    (True, 8, 48, 2, 3, True), *[(True, 4, 48, 1, 3, True)] * 3,
    (False, 8, 96, 2, 3, True), *[(False, 4, 96, 1, 3, True)] * 3,
    (False, 8, 96, 1, 3, False), *[(False, 4, 96, 1, 3, True)] * 3,
    (False, 8, 160, 2, 5, True), *[(False, 4, 160, 1, 5, True)] * 3,
    (False, 8, 192, 1, 3, True),
)
# slim's `mobilenet.training_scope`: batch norm decay 0.997, epsilon 0.001 (ConvBN's).
BN_MOMENTUM = 0.997


def normalize_pixels(images):
    """uint8 RGB -> float32 in [-1, 1] (the inception preprocessing MobileNets were trained and
    MLPerf mobile evaluates with)."""
    return images.astype(jnp.float32) / 127.5 - 1.0


class MobileNetEdgeTPU(nn.Module):
    """`__call__(images [B,H,W,C], train)` -> float32 logits [B, num_classes]."""

    num_classes: int = 1001
    width: float = 1.0
    blocks: int = len(EDGETPU_PLAN)  # the first `blocks` of the plan (minis: fewer)
    stem_stride: int = 2
    last_channels: int = 1280  # scaled by `width` as the other convs (slim's default)
    dtype: Any = jnp.float32
    bn_span: int = 0
    bn_momentum: float = BN_MOMENTUM
    depthwise_impl: str = "conv"  # "shifts": the minis (XLA:CPU, see DepthwiseShifts)

    @nn.compact
    def __call__(self, x, train: bool = True):
        if x.dtype == jnp.uint8:
            x = normalize_pixels(x)
        x = jnp.asarray(x, self.dtype)
        common = dict(dtype=self.dtype, bn_span=self.bn_span, bn_momentum=self.bn_momentum,
                      depthwise_impl=self.depthwise_impl, relu_cap=0.0)
        stem = ConvBN(make_divisible(32 * self.width), 3, self.stem_stride, name="stem", **common)
        x = stem(x, train)
        for i, (fused, t, c, s, k, residual) in enumerate(EDGETPU_PLAN[:self.blocks], start=1):
            x, _ = InvertedResidual(t, make_divisible(c * self.width), s, kernel=k, fused=fused,
                                    residual=residual, name=f"block{i}", **common)(x, train)
        x = ConvBN(make_divisible(self.last_channels * self.width), 1, name="conv_last",
                   **common)(x, train)
        x = jnp.mean(x, axis=(1, 2))
        x = nn.Dense(self.num_classes, dtype=self.dtype, name="logits",
                     kernel_init=nn.with_logical_partitioning(
                         nn.initializers.normal(0.01), ("embed", "classes")))(x)
        return jnp.asarray(x, jnp.float32)
