"""Initialisers of 2-D conv kernels carrying their logical axes (`tpubench.nn.axes.CONV_AXES`)."""

from __future__ import annotations

from typing import Any

from flax import linen as nn

from tpubench.nn.axes import CONV_AXES


def conv_kernel_init(base: Any) -> Any:
    """`base` (a jax initializer) for a 2-D conv kernel [h, w, in, out], its params annotated
    with `CONV_AXES` for the mesh's logical-axis rules."""
    return nn.with_logical_partitioning(base, CONV_AXES)


# torchvision's conv init (kaiming_normal_, mode="fan_out", ReLU gain): ResNet, SSD, MobileNet.
KAIMING = conv_kernel_init(nn.initializers.variance_scaling(2.0, "fan_out", "normal"))
# Xavier (Glorot) uniform: the SSD300 reference's extra blocks and heads (`_init_weights`).
XAVIER = conv_kernel_init(nn.initializers.xavier_uniform())
