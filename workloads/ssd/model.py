"""SSD300 with a ResNet-34 backbone in Flax linen: the MLPerf v0.7 reference model.

Source: mlcommons/training single_stage_detector/ssd (v0.7):
- base_model.py `ResNet34`: torchvision resnet34 up to and including layer3 ("conv4"), conv5
  (layer4), the pooling and the classifier dropped; the first block of layer3 at stride 1
  (`_ModifyBlock(..., stride=(1, 1))` on its conv1 and downsample conv), so a 300x300 image
  gives a 38x38x256 map.
- ssd300.py `SSD300._build_additional_features`: five blocks of conv1x1 + ReLU + conv3x3 +
  ReLU (with biases, no batch norm), channels 256/512, 256/512, 128/256, 128/256, 128/256,
  the first three at stride 2 padding 1, the last two unpadded: maps 19, 10, 5, 3, 1.
- ssd300.py heads: a 3x3 conv (padding 1, bias) per map for 4 * boxes offsets and
  classes * boxes logits, boxes per cell (4, 6, 6, 6, 4, 4); `bbox_view` flattens them
  coordinate-major, (box, row, column) order, which is the default-box order
  (`tpubench.detection.default_boxes`).
- `_init_weights`: Xavier-uniform for the additional blocks and heads (biases: zeros here;
  torch's default is a small uniform). The backbone starts from ImageNet weights in the
  reference (tpubench/convert/torchvision.py); from scratch it uses torchvision's Kaiming-normal
  (fan_out) convs and unit batch-norm scales.

Full size (81 classes): 19,972,534 parameters (tests/test_ssd.py, by jax.eval_shape), 8,732
boxes. The mini uses the same code with fewer blocks, narrower layers and fewer extra blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from tpubench.nn import layers
from tpubench.nn.initializers import KAIMING, XAVIER
from workloads.ssd import mobilenet

ModuleDef = Any


class BasicBlock(nn.Module):
    """torchvision BasicBlock: 3x3 (strided) -> BN -> ReLU -> 3x3 -> BN, + shortcut, ReLU."""

    filters: int
    conv: ModuleDef
    norm: ModuleDef
    strides: int = 1

    @nn.compact
    def __call__(self, x):
        s = (self.strides, self.strides)
        y = nn.relu(self.norm(name="bn1")(self.conv(self.filters, (3, 3), s, name="conv1")(x)))
        y = self.norm(name="bn2")(self.conv(self.filters, (3, 3), name="conv2")(y))
        if x.shape[-1] != self.filters or self.strides != 1:
            x = self.conv(self.filters, (1, 1), s, padding="VALID", name="downsample_conv")(x)
            x = self.norm(name="downsample_bn")(x)
        return nn.relu(x + y)


class ResNetBackbone(nn.Module):
    """ResNet-34 conv1..layer3 with layer3's first block at stride 1 (base_model.py)."""

    stage_sizes: Sequence[int] = (3, 4, 6)
    widths: Sequence[int] = (64, 128, 256)
    stage_strides: Sequence[int] = (1, 2, 1)
    dtype: Any = jnp.float32
    bn_span: int = 0
    bn_momentum: float = 0.9  # torch BatchNorm2d momentum 0.1

    @nn.compact
    def __call__(self, x, train: bool):
        conv = partial(nn.Conv, use_bias=False, dtype=self.dtype, kernel_init=KAIMING,
                       padding=((1, 1), (1, 1)))
        norm = partial(layers.BatchNorm, use_running_average=not train, span=self.bn_span,
                       momentum=self.bn_momentum, epsilon=1e-5, dtype=self.dtype)
        x = conv(self.widths[0], (7, 7), (2, 2), padding=((3, 3), (3, 3)), name="conv1")(x)
        x = nn.relu(norm(name="bn1")(x))
        x = nn.max_pool(x, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
        for i, (n, w, s) in enumerate(zip(self.stage_sizes, self.widths, self.stage_strides,
                                          strict=True)):
            for j in range(n):
                x = BasicBlock(w, conv=conv, norm=norm, strides=s if j == 0 else 1,
                               name=f"layer{i + 1}_{j}")(x)
        return x


class SSD(nn.Module):
    """`__call__(images [B, H, W, C], train)` -> (offsets [B, A, 4], logits [B, A, classes]),
    float32, A = sum over maps of boxes_per_cell * H * W."""

    num_classes: int = 81
    boxes_per_cell: Sequence[int] = (4, 6, 6, 6, 4, 4)
    # (1x1 channels, 3x3 channels, 3x3 stride, 3x3 padding) per additional block (ssd300.py)
    extras: Sequence[Sequence[int]] = ((256, 512, 2, 1), (256, 512, 2, 1), (128, 256, 2, 1),
                                       (128, 256, 1, 0), (128, 256, 1, 0))
    stage_sizes: Sequence[int] = (3, 4, 6)
    widths: Sequence[int] = (64, 128, 256)
    dtype: Any = jnp.float32
    bn_span: int = 0
    # Stride of every loc/conf head conv: 1 in SSD300; 3 in the v0.7 inference model at
    # 1200x1200 (ssd_r34.py `strides[0]`, `strides[1]`), which turns maps 150/75/38/19/9/7 into
    # the 50/25/13/7/3/3 its default boxes expect.
    head_stride: int = 1
    # "resnet34" (the MLPerf reference's, above) or "mobilenet_v1" / "mobilenet_v2"
    # (workloads/ssd/mobilenet.py: two backbone maps, then TF-style extras of (mid, out)).
    backbone: str = "resnet34"
    width: float = 1.0  # MobileNet width multiplier
    stem_stride: int = 2  # MobileNet first conv stride (1 in the minis)
    head_kernel: int = 3
    depthwise_impl: str = "conv"  # MobileNet depthwise convs: "conv" (grouped) or "shifts"
    # Running-statistics momentum of every batch norm; None: the backbone's reference value
    # (ResNet 0.9, torch's; MobileNet 0.999, Keras's: tpubench.nn.mobilenet.BN_MOMENTUM).
    bn_momentum: float | None = None

    def _maps(self, x, train: bool) -> list[Any]:
        """The feature maps the heads read: backbone taps, then one per extra block."""
        if self.backbone == "resnet34":
            x = ResNetBackbone(self.stage_sizes, self.widths, dtype=self.dtype,
                               bn_span=self.bn_span, name="backbone",
                               **self._momentum())(x, train)
            maps = [x]
            conv = partial(nn.Conv, dtype=self.dtype, kernel_init=XAVIER)
            for i, (mid, out, stride, pad) in enumerate(self.extras):
                x = nn.relu(conv(mid, (1, 1), name=f"extra{i}_conv1")(x))
                x = nn.relu(conv(out, (3, 3), (stride, stride), padding=((pad, pad), (pad, pad)),
                                 name=f"extra{i}_conv2")(x))
                maps.append(x)
            return maps
        nets = {"mobilenet_v1": mobilenet.MobileNetV1, "mobilenet_v2": mobilenet.MobileNetV2}
        if self.backbone not in nets:
            raise ValueError(f"SSD: unknown backbone {self.backbone!r} (resnet34, "
                             f"{', '.join(nets)})")
        maps = nets[self.backbone](self.width, self.stem_stride, dtype=self.dtype,
                                   bn_span=self.bn_span, depthwise_impl=self.depthwise_impl,
                                   name="backbone", **self._momentum())(x, train)
        x = maps[-1]
        for i, (mid, out, *_) in enumerate(self.extras):
            x = mobilenet.TFExtraBlock(mid, out, dtype=self.dtype, bn_span=self.bn_span,
                                       name=f"extra{i}", **self._momentum())(x, train)
            maps.append(x)
        return maps

    def _momentum(self) -> dict[str, float]:
        return {} if self.bn_momentum is None else {"bn_momentum": float(self.bn_momentum)}

    @nn.compact
    def __call__(self, x, train: bool = True):
        x = jnp.asarray(x, self.dtype)
        maps = self._maps(x, train)
        if len(self.boxes_per_cell) != len(maps):
            raise ValueError(f"SSD: one boxes_per_cell entry per feature map ({len(maps)}).")
        conv = partial(nn.Conv, dtype=self.dtype, kernel_init=XAVIER)
        offsets, logits = [], []
        # torch padding 1, not SAME: at stride 3 XLA's SAME pads a 150 map by 0 where torch
        # pads 1 on each side, and the windows (so converted weights) would not line up.
        k, pad = self.head_kernel, self.head_kernel // 2
        head = partial(conv, kernel_size=(k, k), strides=(self.head_stride,) * 2, padding=pad)
        for k, (fmap, nd) in enumerate(zip(maps, self.boxes_per_cell, strict=True)):
            offsets.append(self._head(head(nd * 4, name=f"loc{k}")(fmap), nd, 4))
            logits.append(self._head(head(nd * self.num_classes, name=f"conf{k}")(fmap), nd,
                                     self.num_classes))
        return (jnp.concatenate(offsets, 1).astype(jnp.float32),
                jnp.concatenate(logits, 1).astype(jnp.float32))

    @staticmethod
    def _head(y, boxes: int, width: int):
        """[B, H, W, width * boxes] (torch channel = coord * boxes + box) -> [B, boxes*H*W,
        width] in (box, row, column) order: ssd300.py `bbox_view`'s layout."""
        b, h, w, _ = y.shape
        y = y.reshape(b, h, w, width, boxes).transpose(0, 4, 1, 2, 3)
        return y.reshape(b, boxes * h * w, width)


def feature_sizes(model: SSD, image_size: int, channels: int = 3) -> list[int]:
    """The side of each head's output map (the grid its default boxes tile) for a square input,
    by shape inference, no compute."""
    import jax

    def run(x):
        variables = model.init(jax.random.key(0), x, train=False)
        return model.apply(variables, x, train=False, capture_intermediates=True,
                           mutable=["intermediates"])

    out = jax.eval_shape(run, jnp.zeros((1, image_size, image_size, channels)))
    inter = out[1]["intermediates"]
    return [inter[f"loc{k}"]["__call__"][0].shape[1] for k in range(len(model.boxes_per_cell))]
