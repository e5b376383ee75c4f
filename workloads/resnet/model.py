"""ResNet v1.5 in Flax linen (stride 2 in the 3x3 conv of the first bottleneck of a stage).

ResNet-50 = stage_sizes (3, 4, 6, 3), 64 filters, ImageNet stem: exactly 25,557,032 params with
1000 classes. Small variants (the mini config) use the same blocks with a 3x3 stride-1 stem for
tiny images. Conv kernels carry logical axis names so the harness can shard them by config.

Pixels: a uint8 image batch (what the ImageNet pipeline feeds, a quarter of float32's bytes on
the host-to-device link) is normalised here, on device, by the ImageNet channel mean and std
(`normalize_pixels`); float inputs (the minis, already scaled by their pipelines) pass as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from tpubench.nn import convolution, layers
from tpubench.nn.initializers import KAIMING

ModuleDef = Any
# The MLPerf reference's ImageNet channel statistics, in 0-255 pixel units.
MEAN_RGB = np.array([0.485, 0.456, 0.406], np.float32) * 255
STDDEV_RGB = np.array([0.229, 0.224, 0.225], np.float32) * 255


def normalize_pixels(images: jax.Array) -> jax.Array:
    """uint8 RGB [..., 3] -> float32 (x - mean) / std, as the reference's host pipeline does."""
    return (images.astype(jnp.float32) - MEAN_RGB) / STDDEV_RGB


class BottleneckBlock(nn.Module):
    """1x1 -> 3x3 (strided, v1.5) -> 1x1 x4, with a projection shortcut when shapes change."""

    filters: int
    conv: ModuleDef
    norm: ModuleDef
    act: Callable = nn.relu
    strides: tuple[int, int] = (1, 1)

    @nn.compact
    def __call__(self, x):
        residual = x
        y = self.act(self.norm()(self.conv(self.filters, (1, 1))(x)))
        y = self.act(self.norm()(self.conv(self.filters, (3, 3), self.strides)(y)))
        y = self.conv(self.filters * 4, (1, 1))(y)
        y = self.norm(scale_init=nn.initializers.zeros)(y)  # zero-init last BN gamma
        if residual.shape != y.shape:
            proj = self.conv(self.filters * 4, (1, 1), self.strides, name="conv_proj")
            residual = proj(residual)
            residual = self.norm(name="norm_proj")(residual)
        return self.act(residual + y)


class ResNet(nn.Module):
    """ResNet v1.5 classifier: `__call__(images [B,H,W,C], train)` -> float32 logits."""

    stage_sizes: Sequence[int]
    num_classes: int
    num_filters: int = 64
    stem: str = "imagenet"  # "imagenet": 7x7/2 conv + 3x3/2 max-pool; "small": 3x3/1 conv
    dtype: Any = jnp.float32
    bn_momentum: float = 0.9
    bn_epsilon: float = 1e-5
    bn_span: int = 0  # examples per batch-norm statistics group (config.model_bn_span); 0 = all
    conv_impl: str = "auto"  # tpubench.nn.convolution: 1x1 convolutions as matmuls on CPU

    @nn.compact
    def __call__(self, x, train: bool = True):
        conv = partial(nn.Conv, use_bias=False, dtype=self.dtype, kernel_init=KAIMING,
                       conv_general_dilated=convolution.conv_fn(self.conv_impl))
        norm = partial(
            layers.BatchNorm,
            use_running_average=not train,
            span=self.bn_span,
            momentum=self.bn_momentum,
            epsilon=self.bn_epsilon,
            dtype=self.dtype,
        )
        if x.dtype == jnp.uint8:
            x = normalize_pixels(x)
        x = jnp.asarray(x, self.dtype)
        if self.stem == "imagenet":
            stem = conv(self.num_filters, (7, 7), (2, 2), padding=[(3, 3)] * 2, name="conv_init")
            x = stem(x)
            x = nn.relu(norm(name="bn_init")(x))
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
        else:
            x = conv(self.num_filters, (3, 3), name="conv_init")(x)
            x = nn.relu(norm(name="bn_init")(x))
        for i, block_size in enumerate(self.stage_sizes):
            for j in range(block_size):
                strides = (2, 2) if i > 0 and j == 0 else (1, 1)
                block = BottleneckBlock(
                    self.num_filters * 2**i, conv=conv, norm=norm, strides=strides)
                x = block(x)
        x = jnp.mean(x, axis=(1, 2))
        x = nn.Dense(
            self.num_classes,
            dtype=self.dtype,
            kernel_init=nn.with_logical_partitioning(
                nn.initializers.normal(0.01), ("embed", "classes")
            ),
        )(x)
        return jnp.asarray(x, jnp.float32)
