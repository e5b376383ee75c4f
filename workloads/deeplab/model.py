"""DeepLabv3+ with a MobileNetV2 backbone (MLPerf mobile v0.7 `deeplabv3`), Flax.

The published model is mlcommons/mobile_open `vision/deeplab/models_and_code` (checkpoint
`checkpoints/float/model.ckpt-200000`, FP32 mIoU 0.5528 on ADE20K's 2,000 val images resized to
512x512, 32 classes), a copy of TF models/research/deeplab fixed to MobileNetV2. Its README's
train and export commands set `--output_stride=16 --decoder_output_stride=4
--train_crop_size=512,512 --num_classes=32` and no `--atrous_rates`; `common.py` keeps the
defaults `depth_multiplier` 1.0, `aspp_with_separable_conv`, `decoder_use_separable_conv`,
`aspp_with_concat_projection`, `aspp_convs_filters` 256, `decoder_filters` 256. So:

- backbone (`core/feature_extractor.py` `_mobilenet_v2`): slim `mobilenet_v2.V2_DEF` up to
  `layer_18` (the last 320-channel inverted residual; NO 1x1 conv to 1280), ReLU6, batch norm
  decay 0.997 epsilon 0.001. Output stride 16 (slim `mobilenet_base`): once the stride reaches
  16, the next stride-2 layer (`layer_15`, the first 160-channel block) runs at stride 1 and
  every later depthwise conv at atrous rate 2.
- ASPP (`model.py` `extract_features`, `atrous_rates` None): an image-pooling branch (average
  pool over the whole 32x32 map at 512x512, 1x1 conv to 256 + BN + ReLU, resized back) and
  `aspp0` (1x1 conv to 256 + BN + ReLU), concatenated, `concat_projection` (1x1 to 256 + BN +
  ReLU), dropout keep 0.9. No 3x3 atrous branches.
- decoder (`refine_by_decoder`, decoder output stride 4): `feature_projection0` (1x1 conv of
  `layer_4/depthwise_output`, 144 channels at stride 4, to 48 + BN + ReLU), the ASPP output
  resized (bilinear) to that 128x128 map, concatenated, then two split separable convs
  (`decoder_conv0`, `decoder_conv1`: 3x3 depthwise + BN + ReLU, 1x1 to 256 + BN + ReLU).
  The head's batch norms: decay 0.9997, epsilon 1e-5 (`utils.get_batch_norm_params`).
- logits (`get_branch_logits`): 1x1 conv with bias to the classes (`logits/semantic`),
  bilinearly resized to 512x512 and argmaxed (`predict_labels`).
Resizes are TF1 `tf.image.resize_bilinear(align_corners=False)` (`core/utils.py`): source
coordinate = output index x (in / out), no half-pixel offset (`resize_bilinear` below).

Class convention (`datasets/data_generator.py`): 32 classes, label 0 is the ignore label (the
ADE20K pixels outside the 31 kept classes); the model still has 32 logits.

Small variants (the minis) scale every channel count with `width` (the backbone as slim's
`depth_multiplier`, via `make_divisible`; the head's 256 / 48 filters by config), may take a
stride-1 stem for small images, and compute depthwise convs as shifts on XLA:CPU.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from tpubench.nn.initializers import conv_kernel_init
from tpubench.nn.mobilenet import V2_PLAN, ConvBN, InvertedResidual, make_divisible

BACKBONE_BN_MOMENTUM = 0.997  # slim mobilenet_v2.training_scope bn_decay
HEAD_BN_MOMENTUM = 0.9997  # deeplab get_batch_norm_params decay
HEAD_BN_EPSILON = 1e-5
DECODER_TAP_BLOCK = 3  # TF's layer_4 (layer_1 is the stem): the second 24-channel block


def _interp_matrix(n_in: int, n_out: int) -> np.ndarray:
    """[n_out, n_in] weights of TF1 bilinear resizing (align_corners=False, no half pixel)."""
    src = np.arange(n_out, dtype=np.float64) * (n_in / n_out)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = src - i0
    m = np.zeros((n_out, n_in), np.float64)
    np.add.at(m, (np.arange(n_out), i0), 1.0 - frac)
    np.add.at(m, (np.arange(n_out), i1), frac)
    return m.astype(np.float32)


def resize_bilinear(x, size: tuple[int, int]):
    """[B, H, W, C] -> [B, size[0], size[1], C] as TF1 `resize_bilinear(align_corners=False)`:
    two small matrix products (exact to float rounding; XLA has no such resize mode)."""
    h, w = x.shape[1:3]
    if (h, w) == tuple(size):
        return x
    mh = jnp.asarray(_interp_matrix(h, size[0]), x.dtype)
    mw = jnp.asarray(_interp_matrix(w, size[1]), x.dtype)
    x = jnp.einsum("oh,bhwc->bowc", mh, x)
    return jnp.einsum("pw,bowc->bopc", mw, x)


class MobileNetV2Backbone(nn.Module):
    """`__call__(x, train)` -> (features [B, H/os, W/os, 320 w], decoder tap
    `layer_4/depthwise_output`). Module names as the SSD MobileNetV2 (`stem`, `block1`..)."""

    width: float = 1.0
    output_stride: int = 16
    stem_stride: int = 2
    dtype: Any = jnp.float32
    bn_span: int = 0
    bn_momentum: float = BACKBONE_BN_MOMENTUM
    depthwise_impl: str = "conv"

    @nn.compact
    def __call__(self, x, train: bool):
        common = dict(dtype=self.dtype, bn_span=self.bn_span, bn_momentum=self.bn_momentum,
                      depthwise_impl=self.depthwise_impl)
        x = ConvBN(make_divisible(32 * self.width), 3, self.stem_stride, name="stem",
                   **common)(x, train)
        current, rate, block, tap = self.stem_stride, 1, 0, None
        for t, c, n, s in V2_PLAN:
            for j in range(n):
                block += 1
                stride = s if j == 0 else 1
                if current == self.output_stride:  # slim mobilenet_base's atrous rule
                    layer_stride, layer_rate, rate = 1, rate, rate * stride
                else:
                    layer_stride, layer_rate, current = stride, 1, current * stride
                x, tapped = InvertedResidual(
                    t, make_divisible(c * self.width), layer_stride, dilation=layer_rate,
                    tap="depthwise", name=f"block{block}", **common)(x, train)
                if block == DECODER_TAP_BLOCK:
                    tap = tapped
        return x, tap


class DeepLabV3Plus(nn.Module):
    """`__call__(images [B, H, W, C], train)` -> float32 logits at the decoder's stride
    ([B, H/4, W/4, num_classes] at a stride-2 stem); `labels` upsamples and argmaxes."""

    num_classes: int = 32
    width: float = 1.0
    output_stride: int = 16
    stem_stride: int = 2
    aspp_filters: int = 256
    decoder_filters: int = 256
    projection_filters: int = 48
    dropout_rate: float = 0.1  # concat_projection_dropout keep_prob 0.9
    dtype: Any = jnp.float32
    bn_span: int = 0
    backbone_bn_momentum: float = BACKBONE_BN_MOMENTUM
    head_bn_momentum: float = HEAD_BN_MOMENTUM
    depthwise_impl: str = "conv"

    @nn.compact
    def __call__(self, x, train: bool = True):
        if x.dtype == jnp.uint8:  # _preprocess_zero_mean_unit_range
            x = x.astype(jnp.float32) * (2.0 / 255.0) - 1.0
        x = jnp.asarray(x, self.dtype)
        features, low = MobileNetV2Backbone(
            self.width, self.output_stride, self.stem_stride, self.dtype, self.bn_span,
            self.backbone_bn_momentum, self.depthwise_impl, name="backbone")(x, train)
        cb = partial(ConvBN, dtype=self.dtype, bn_span=self.bn_span,
                     bn_momentum=self.head_bn_momentum, epsilon=HEAD_BN_EPSILON,
                     depthwise_impl=self.depthwise_impl, relu_cap=0.0)
        pooled = jnp.mean(features, axis=(1, 2), keepdims=True)
        pooled = cb(self.aspp_filters, 1, name="image_pooling")(pooled, train)
        pooled = jnp.broadcast_to(pooled, features.shape[:3] + (pooled.shape[-1],))
        aspp0 = cb(self.aspp_filters, 1, name="aspp0")(features, train)
        y = jnp.concatenate([pooled, aspp0], -1)
        y = cb(self.aspp_filters, 1, name="concat_projection")(y, train)
        y = nn.Dropout(self.dropout_rate, deterministic=not train)(y)
        low = cb(self.projection_filters, 1, name="feature_projection0")(low, train)
        y = jnp.concatenate([resize_bilinear(y, low.shape[1:3]), low], -1)
        for i in range(2):
            y = cb(y.shape[-1], 3, depthwise=True, name=f"decoder_conv{i}_depthwise")(y, train)
            y = cb(self.decoder_filters, 1, name=f"decoder_conv{i}_pointwise")(y, train)
        y = nn.Conv(self.num_classes, (1, 1), dtype=self.dtype, name="logits",
                    kernel_init=conv_kernel_init(nn.initializers.normal(0.01)))(y)
        return jnp.asarray(y, jnp.float32)


def labels(logits, size: tuple[int, int]):
    """Per-pixel class (int32) at `size`: logits bilinearly resized first, then argmax
    (`prediction_with_upsampled_logits`, the reference's default)."""
    return jnp.argmax(resize_bilinear(logits, size), -1).astype(jnp.int32)
