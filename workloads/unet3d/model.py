"""The nnU-Net 3D U-Net of the MLPerf Inference v0.7 `3d-unet` reference, in Flax (NDHWC).

mlcommons/inference `v0.7/medical_imaging/3d-unet` serves nnU-Net's `Generic_UNet` (MIC-DKFZ/nnUNet
`nnunet/network_architecture/generic_UNet.py`) as trained by `nnUNetTrainerV2` on BraTS 2019
(Task043, plans `nnUNetPlansv2.mlperf.1`, exported by `unet_pytorch_to_onnx.py` for a
[1, 4, 224, 224, 160] input). What that network is, and what this module does the same way:
  * 5 resolution stages below the first (pool kernels 2x2x2, the v2.1 planner's choice for a
    128^3 patch with feature maps >= 4), 2 convolutions per stage, 3x3x3 kernels, padding 1.
  * Features: 32 at full resolution (ExperimentPlanner3D_v21 `unet_base_num_features = 32`),
    doubled per stage, capped at 320 (`unet_max_num_filters`): 32, 64, 128, 256, 320, 320.
  * Every convolution: Conv3d (bias) -> Dropout (p=0) -> InstanceNorm3d (eps 1e-5, affine)
    -> LeakyReLU (negative slope 1e-2) (`ConvDropoutNormNonlin`).
  * Downsampling: the first convolution of each stage below the first has stride 2
    (`convolutional_pooling=True`); upsampling: ConvTranspose3d, kernel = stride = 2, no bias
    (`convolutional_upsampling=True`), then concatenation with the encoder's skip.
  * Deep supervision (training): a 1x1x1 convolution without bias to the classes after every
    decoder stage (`seg_outputs`); the ONNX export's five outputs. Inference uses the full-
    resolution one only (the ONNX SUT reads the output named "output").
Parameter names follow the PyTorch module tree (`convert.py` maps them one to one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
from flax import linen as nn

# Logical names of a conv kernel [d, h, w, in, out] and of per-channel vectors.
KERNEL_AXES = ("conv_d", "conv_h", "conv_w", "conv_in", "conv_out")
CHANNEL_AXES = ("conv_out",)


def stage_features(base: int, maximum: int, num_pools: int) -> list[int]:
    """Features of the num_pools + 1 encoder stages: base * 2^d, capped at `maximum`."""
    return [min(base * 2 ** d, maximum) for d in range(num_pools + 1)]


class ConvNormNonlin(nn.Module):
    """Conv3d (3x3x3, bias) -> InstanceNorm (eps 1e-5, affine) -> LeakyReLU(0.01)."""

    features: int
    stride: int = 1
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        init = nn.initializers.variance_scaling(2.0 / (1 + 0.01 ** 2), "fan_in", "normal")
        x = nn.Conv(self.features, (3, 3, 3), strides=(self.stride,) * 3, padding=1,
                    dtype=self.dtype, name="conv",
                    kernel_init=nn.with_logical_partitioning(init, KERNEL_AXES),
                    bias_init=nn.with_logical_partitioning(nn.initializers.zeros, CHANNEL_AXES))(x)
        # Statistics over the spatial axes of each example and channel, in float32.
        x = nn.InstanceNorm(epsilon=1e-5, dtype=jnp.float32, name="instnorm",
                            scale_init=nn.with_logical_partitioning(nn.initializers.ones,
                                                                    CHANNEL_AXES),
                            bias_init=nn.with_logical_partitioning(nn.initializers.zeros,
                                                                   CHANNEL_AXES))(x)
        return nn.leaky_relu(x, 0.01).astype(self.dtype)


class UNet3D(nn.Module):
    """nnU-Net's Generic_UNet (3D, convolutional pooling and upsampling, deep supervision).

    `__call__(x [B, D, H, W, C], train)` returns the full-resolution logits [B, D, H, W,
    classes] (float32); with `train=True` and `deep_supervision`, a list of logits from full
    resolution down (nnU-Net's order), one per decoder stage. Spatial sizes must be divisible
    by 2^num_pools.
    """

    num_classes: int = 4
    base_features: int = 32
    max_features: int = 320
    num_pools: int = 5
    deep_supervision: bool = True
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x, train: bool = False):
        feats = stage_features(self.base_features, self.max_features, self.num_pools)
        x = x.astype(self.dtype)
        skips = []
        for d in range(self.num_pools):  # conv_blocks_context[0..num_pools-1]
            x = ConvNormNonlin(feats[d], 1 if d == 0 else 2, self.dtype,
                               name=f"context_{d}_0")(x)
            x = ConvNormNonlin(feats[d], 1, self.dtype, name=f"context_{d}_1")(x)
            skips.append(x)
        x = ConvNormNonlin(feats[-1], 2, self.dtype, name=f"context_{self.num_pools}_0")(x)
        x = ConvNormNonlin(feats[-1], 1, self.dtype, name=f"context_{self.num_pools}_1")(x)
        outputs = []
        init = nn.initializers.variance_scaling(2.0 / (1 + 0.01 ** 2), "fan_in", "normal")
        for u in range(self.num_pools):  # tu[u], conv_blocks_localization[u], seg_outputs[u]
            skip = skips[-(u + 1)]
            x = nn.ConvTranspose(skip.shape[-1], (2, 2, 2), strides=(2, 2, 2), padding="VALID",
                                 use_bias=False, dtype=self.dtype, name=f"tu_{u}",
                                 kernel_init=nn.with_logical_partitioning(init, KERNEL_AXES))(x)
            x = jnp.concatenate([x, skip], axis=-1)
            x = ConvNormNonlin(skip.shape[-1], 1, self.dtype, name=f"localization_{u}_0")(x)
            x = ConvNormNonlin(skip.shape[-1], 1, self.dtype, name=f"localization_{u}_1")(x)
            if train and self.deep_supervision or u == self.num_pools - 1:
                logits = nn.Conv(self.num_classes, (1, 1, 1), use_bias=False, dtype=self.dtype,
                                 name=f"seg_outputs_{u}",
                                 kernel_init=nn.with_logical_partitioning(init, KERNEL_AXES))(x)
                outputs.append(logits.astype(jnp.float32))
            elif self.is_initializing():  # params of every head exist whatever the mode
                nn.Conv(self.num_classes, (1, 1, 1), use_bias=False, name=f"seg_outputs_{u}",
                        kernel_init=nn.with_logical_partitioning(init, KERNEL_AXES))(x)
        if train and self.deep_supervision:
            return outputs[::-1]  # full resolution first, as Generic_UNet.forward
        return outputs[-1]


def parameter_count(in_channels: int, num_classes: int, feats: Sequence[int]) -> int:
    """Parameters of Generic_UNet from its construction rules (a closed form, independent of
    the Flax module): per conv 27*in*out + out (bias) + 2*out (instance-norm affine); per
    transposed conv 8*in*out; per seg output out*classes."""
    def conv(i, o):
        return 27 * i * o + 3 * o

    n, prev = 0, in_channels
    for f in feats:  # encoder stages and bottleneck: two convs each
        n += conv(prev, f) + conv(f, f)
        prev = f
    for u in range(len(feats) - 1):
        skip = feats[-(u + 2)]
        n += 8 * prev * skip + conv(2 * skip, skip) + conv(skip, skip) + skip * num_classes
        prev = skip
    return n
