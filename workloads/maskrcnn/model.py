"""Mask R-CNN R-50-FPN in Flax linen: the MLPerf v0.7 reference's modules, nothing else.

Source: mlcommons/training object_detection/pytorch/maskrcnn_benchmark/modeling (v0.7) with
configs/e2e_mask_rcnn_R_50_FPN_1x.yaml and config/defaults.py:
- backbone/resnet.py: ResNet-50 (stages 3, 4, 6, 3 of bottlenecks 64/256 ... 512/2048),
  `StemWithFixedBatchNorm` and `BottleneckWithFixedBatchNorm`: every batch norm is a
  `FrozenBatchNorm2d` (layers/batch_norm.py: y = x * w / sqrt(var) + (b - mean * w / sqrt(var)),
  no epsilon, nothing learned), the stride in the 1x1 conv (`STRIDE_IN_1X1 = True`, the MSRA
  weights'), convs without bias; `FREEZE_CONV_BODY_AT = 2`: the stem and res2 get no gradient.
- backbone/fpn.py: per C2..C5 a 1x1 lateral and a 3x3 output conv (256, with bias), top-down
  nearest x2 upsampling added to the lateral; `LastLevelMaxPool`: P6 = max_pool(P5, 1, stride 2).
- rpn/rpn.py `RPNHead`: 3x3 conv 256 + ReLU, 1x1 objectness (A = 3 per location) and 1x1 box
  deltas (4A), shared by P2..P6; normal(std 0.01) weights, zero biases.
- roi_heads/box_head: `FPN2MLPFeatureExtractor` (7x7x256 pooled -> fc6 1024 -> fc7 1024, ReLU;
  kaiming_uniform(a=1) init) and `FPNPredictor` (cls 81: normal 0.01; class-specific boxes
  4 x 81: normal 0.001; zero biases).
- roi_heads/mask_head: `MaskRCNNFPNFeatureExtractor` (14x14 pooled -> 4 x (3x3 conv 256 +
  ReLU), kaiming_normal fan_out) and `MaskRCNNC4Predictor` (2x2 stride-2 transposed conv 256 +
  ReLU, 1x1 conv to 81 mask logits: 28x28).

Full size, 81 classes: 44,347,573 parameters without the frozen batch norms' affines
(tests/test_maskrcnn.py, by jax.eval_shape). Layout NHWC. The mini uses the same code,
narrower and shallower.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

from tpubench.nn.initializers import KAIMING, conv_kernel_init

DENSE_AXES = ("fc_in", "fc_out")


def _dense_init(base):
    return nn.with_logical_partitioning(base, DENSE_AXES)


KAIMING_UNIFORM_A1 = nn.initializers.variance_scaling(1.0, "fan_in", "uniform")  # a=1


class FrozenBatchNorm(nn.Module):
    """layers/batch_norm.py FrozenBatchNorm2d: fixed per-channel affine from (weight, bias,
    running_mean, running_var), no epsilon. `scale`/`bias` are params (the converter fills
    them; the optimizer leaves them alone when `frozen`), mean/var live in "batch_stats"."""

    frozen: bool = True
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        c = x.shape[-1]
        scale = self.param("scale", nn.initializers.ones, (c,))
        bias = self.param("bias", nn.initializers.zeros, (c,))
        mean = self.variable("batch_stats", "mean", jnp.zeros, (c,)).value
        var = self.variable("batch_stats", "var", jnp.ones, (c,)).value
        if self.frozen:
            scale, bias = jax.lax.stop_gradient(scale), jax.lax.stop_gradient(bias)
        s = scale * jax.lax.rsqrt(var)
        return (x * s + (bias - mean * s)).astype(self.dtype)


class Bottleneck(nn.Module):
    """resnet.py Bottleneck: 1x1 -> 3x3 -> 1x1 (x4 out), FrozenBN after each, ReLU, shortcut."""

    width: int
    out: int
    stride: int
    stride_in_1x1: bool
    conv: Any
    norm: Any

    @nn.compact
    def __call__(self, x):
        s1 = self.stride if self.stride_in_1x1 else 1
        s3 = 1 if self.stride_in_1x1 else self.stride
        y = nn.relu(self.norm(name="bn1")(self.conv(self.width, (1, 1), (s1, s1),
                                                    padding="VALID", name="conv1")(x)))
        y = nn.relu(self.norm(name="bn2")(self.conv(self.width, (3, 3), (s3, s3),
                                                    padding=((1, 1), (1, 1)), name="conv2")(y)))
        y = self.norm(name="bn3")(self.conv(self.out, (1, 1), padding="VALID", name="conv3")(y))
        if x.shape[-1] != self.out or self.stride != 1:
            x = self.conv(self.out, (1, 1), (self.stride, self.stride), padding="VALID",
                          name="downsample_conv")(x)
            x = self.norm(name="downsample_bn")(x)
        return nn.relu(x + y)


class ResNetBody(nn.Module):
    """resnet.py ResNet: stem (7x7/2 conv, FrozenBN, ReLU, 3x3/2 max pool) and four stages;
    returns C2..C5. Module names are torchvision's (tpubench/convert/torchvision.py reads them)."""

    stage_sizes: Sequence[int] = (3, 4, 6, 3)
    widths: Sequence[int] = (64, 128, 256, 512)
    stem_width: int = 64
    stride_in_1x1: bool = True
    freeze_at: int = 2
    frozen_bn: bool = True
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        conv = partial(nn.Conv, use_bias=False, dtype=self.dtype, kernel_init=KAIMING)
        norm = partial(FrozenBatchNorm, frozen=self.frozen_bn, dtype=self.dtype)
        x = conv(self.stem_width, (7, 7), (2, 2), padding=((3, 3), (3, 3)), name="conv1")(x)
        x = nn.relu(norm(name="bn1")(x))
        x = nn.max_pool(x, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
        if self.freeze_at >= 1:
            x = jax.lax.stop_gradient(x)
        outs = []
        for i, (n, w) in enumerate(zip(self.stage_sizes, self.widths, strict=True)):
            for j in range(n):
                x = Bottleneck(w, 4 * w, (1 if i == 0 else 2) if j == 0 else 1,
                               self.stride_in_1x1, conv, norm, name=f"layer{i + 1}_{j}")(x)
            if self.freeze_at >= i + 2:
                x = jax.lax.stop_gradient(x)
            outs.append(x)
        return outs


class FPN(nn.Module):
    """fpn.py FPN + LastLevelMaxPool: [C2..C5] -> [P2..P6], `channels` each."""

    channels: int = 256
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, feats):
        init = conv_kernel_init(KAIMING_UNIFORM_A1)  # fpn.py conv_with_kaiming_uniform: a=1, bias 0
        conv = partial(nn.Conv, self.channels, dtype=self.dtype, kernel_init=init)
        last = conv((1, 1), name=f"inner{len(feats)}")(feats[-1])
        results = [conv((3, 3), padding=((1, 1), (1, 1)), name=f"layer{len(feats)}")(last)]
        for k in range(len(feats) - 1, 0, -1):
            f = feats[k - 1]
            up = jnp.repeat(jnp.repeat(last, 2, axis=1), 2, axis=2)[:, :f.shape[1], :f.shape[2]]
            last = conv((1, 1), name=f"inner{k}")(f) + up
            results.insert(0, conv((3, 3), padding=((1, 1), (1, 1)), name=f"layer{k}")(last))
        results.append(results[-1][:, ::2, ::2])  # max_pool2d(kernel 1, stride 2)
        return results


class RPNHead(nn.Module):
    """rpn.py RPNHead on every level: (objectness [B, H*W*A], deltas [B, H*W*A, 4]) per level,
    in the anchors' (row, column, anchor) order."""

    anchors_per_cell: int = 3
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, features):
        init = conv_kernel_init(nn.initializers.normal(0.01))
        c = features[0].shape[-1]
        conv = nn.Conv(c, (3, 3), padding=((1, 1), (1, 1)), dtype=self.dtype, kernel_init=init,
                       name="conv")
        cls = nn.Conv(self.anchors_per_cell, (1, 1), dtype=self.dtype, kernel_init=init,
                      name="cls_logits")
        reg = nn.Conv(4 * self.anchors_per_cell, (1, 1), dtype=self.dtype, kernel_init=init,
                      name="bbox_pred")
        logits, deltas = [], []
        for f in features:
            t = nn.relu(conv(f))
            b, h, w, _ = t.shape
            logits.append(cls(t).reshape(b, h * w * self.anchors_per_cell).astype(jnp.float32))
            # torch's bbox_pred channel = anchor * 4 + coordinate (rpn/utils.py permute_and_flatten)
            deltas.append(reg(t).reshape(b, h * w * self.anchors_per_cell, 4).astype(jnp.float32))
        return logits, deltas


class BoxHead(nn.Module):
    """FPN2MLPFeatureExtractor + FPNPredictor: pooled [R, 7, 7, C] -> (logits [R, K],
    class-specific deltas [R, K, 4])."""

    num_classes: int = 81
    mlp_dim: int = 1024
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, pooled):
        # torch flattens NCHW (channel-major); the order is a fixed permutation of fc6's rows
        # (the converter would transpose it; from scratch it changes nothing).
        x = pooled.reshape(pooled.shape[0], -1).astype(self.dtype)
        dense = partial(nn.Dense, dtype=self.dtype,
                        kernel_init=_dense_init(KAIMING_UNIFORM_A1))
        x = nn.relu(dense(self.mlp_dim, name="fc6")(x))
        x = nn.relu(dense(self.mlp_dim, name="fc7")(x))
        logits = nn.Dense(self.num_classes, dtype=self.dtype, name="cls_score",
                          kernel_init=_dense_init(nn.initializers.normal(0.01)))(x)
        deltas = nn.Dense(4 * self.num_classes, dtype=self.dtype, name="bbox_pred",
                          kernel_init=_dense_init(nn.initializers.normal(0.001)))(x)
        return (logits.astype(jnp.float32),
                deltas.reshape(-1, self.num_classes, 4).astype(jnp.float32))


class MaskHead(nn.Module):
    """MaskRCNNFPNFeatureExtractor + MaskRCNNC4Predictor: pooled [R, 14, 14, C] -> mask logits
    [R, 28, 28, K]."""

    num_classes: int = 81
    convs: Sequence[int] = (256, 256, 256, 256)
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, pooled):
        x = pooled.astype(self.dtype)
        for i, c in enumerate(self.convs):
            x = nn.relu(nn.Conv(c, (3, 3), padding=((1, 1), (1, 1)), dtype=self.dtype,
                                kernel_init=KAIMING, name=f"mask_fcn{i + 1}")(x))
        x = nn.relu(nn.ConvTranspose(self.convs[-1], (2, 2), (2, 2), dtype=self.dtype,
                                     kernel_init=KAIMING, name="conv5_mask")(x))
        x = nn.Conv(self.num_classes, (1, 1), dtype=self.dtype, kernel_init=KAIMING,
                    name="mask_fcn_logits")(x)
        return x.astype(jnp.float32)


class MaskRCNN(nn.Module):
    """The modules; the workload wires them (proposals, sampling, RoIAlign are not layers).

    `__call__` runs every part once on dummy RoIs (what `init` needs); the workload calls
    `features`, `rpn`, `box_head` and `mask_head` through `apply(..., method=...)`."""

    num_classes: int = 81
    stage_sizes: Sequence[int] = (3, 4, 6, 3)
    widths: Sequence[int] = (64, 128, 256, 512)
    stem_width: int = 64
    stride_in_1x1: bool = True
    freeze_at: int = 2
    frozen_bn: bool = True
    fpn_channels: int = 256
    anchors_per_cell: int = 3
    mlp_dim: int = 1024
    mask_convs: Sequence[int] = (256, 256, 256, 256)
    box_pool: int = 7
    mask_pool: int = 14
    dtype: Any = jnp.float32

    def setup(self):
        self.backbone = ResNetBody(self.stage_sizes, self.widths, self.stem_width,
                                   self.stride_in_1x1, self.freeze_at, self.frozen_bn, self.dtype)
        self.fpn = FPN(self.fpn_channels, self.dtype)
        self.rpn_head = RPNHead(self.anchors_per_cell, self.dtype)
        self.box = BoxHead(self.num_classes, self.mlp_dim, self.dtype)
        self.mask = MaskHead(self.num_classes, tuple(self.mask_convs), self.dtype)

    def features(self, images):
        """[B, H, W, 3] -> [P2, ..., P6]."""
        return self.fpn(self.backbone(jnp.asarray(images, self.dtype)))

    def rpn(self, features):
        return self.rpn_head(features)

    def box_head(self, pooled):
        return self.box(pooled)

    def mask_head(self, pooled):
        return self.mask(pooled)

    def __call__(self, images, train: bool = False):
        feats = self.features(images)
        self.rpn(feats)
        c = self.fpn_channels
        self.box_head(jnp.zeros((1, self.box_pool, self.box_pool, c), self.dtype))
        self.mask_head(jnp.zeros((1, self.mask_pool, self.mask_pool, c), self.dtype))
        return feats
