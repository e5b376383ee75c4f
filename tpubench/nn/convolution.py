"""Convolutions as the backend runs them fastest: `model.conv_impl` (issue 17.5).

XLA:CPU lowers a 1x1 convolution's filter gradient to a convolution whose window is the whole
feature map, fed by activations transposed to [C, H, W, B]; the transposes fuse with the batch
norm and residual arithmetic before them and recompute it. Profiled (`benchmarks/cpu_profile.py`,
ResNet-50 float32, batch 32, quiet 2-core host): filter gradients were 38% of the step, the
transposing fusions most of the 25% under batch norm's scope. As a matmul ([B*H*W, C_in] @
[C_in, C_out], a strided input sliced first) the whole ResNet-50 train step ran 1.7x faster
(`benchmarks/cpu_gap.py`; figures and `benchmarks/conv_forms.py`'s per-shape timings in
benchmarks/README.md, "The CPU gap"). A k x k convolution stays a lax convolution: its im2col
+ matmul form was no faster at stride 1 (0.82-1.07x).

The math is the same (the sums run in another order: float32 differences ~1e-6 relative).
Accelerators keep `lax.conv_general_dilated` (what their compilers are tuned for; the matmul
form was not measured there): `auto` decides at trace time from the platform of the mesh the
step is traced under (`jax.sharding.get_abstract_mesh()`; the default backend when there is
none), so `tpubench fit` on a TPU topology compiles what a TPU run would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from tpubench.errors import UsageError

IMPLS = ("auto", "xla", "matmul")
_NHWC = lax.ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1),
                                 out_spec=(0, 3, 1, 2))


def _trivial(dilation: Sequence[int] | None) -> bool:
    return dilation is None or all(d == 1 for d in dilation)


def pointwise_as_matmul(lhs: jax.Array, rhs: jax.Array, window_strides: Sequence[int],
                        padding: str | Sequence[tuple[int, int]], lhs_dilation=None,
                        rhs_dilation=None, dimension_numbers=None, feature_group_count: int = 1,
                        batch_group_count: int = 1, precision=None,
                        preferred_element_type=None) -> jax.Array:
    """`lax.conv_general_dilated`, with a 1x1 NHWC/HWIO convolution (any stride and padding,
    no dilation or groups) computed as a matmul; anything else goes to lax unchanged."""
    args = (lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
            feature_group_count, batch_group_count, precision, preferred_element_type)
    dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    if (lhs.ndim != 4 or dn != _NHWC or tuple(rhs.shape[:2]) != (1, 1)
            or feature_group_count != 1 or batch_group_count != 1
            or not _trivial(lhs_dilation) or not _trivial(rhs_dilation)):
        return lax.conv_general_dilated(*args)
    sh, sw = window_strides
    if isinstance(padding, str):
        padding = lax.padtype_to_pads(lhs.shape[1:3], (1, 1), window_strides, padding)
    (pt, pb), (pl, pr) = padding
    x = lhs
    if any((pt, pb, pl, pr)):
        x = lax.pad(x, jnp.zeros((), x.dtype),
                    ((0, 0, 0), (pt, pb, 0), (pl, pr, 0), (0, 0, 0)))
    ho = (x.shape[1] - 1) // sh + 1
    wo = (x.shape[2] - 1) // sw + 1
    if (sh, sw) != (1, 1):
        x = x[:, : sh * (ho - 1) + 1 : sh, : sw * (wo - 1) + 1 : sw, :]
    b, c_in, c_out = x.shape[0], rhs.shape[2], rhs.shape[3]
    y = jnp.dot(x.reshape(b * ho * wo, c_in), rhs.reshape(c_in, c_out), precision=precision,
                preferred_element_type=preferred_element_type)
    return y.reshape(b, ho, wo, c_out)


def traced_platform() -> str:
    """The platform the current trace compiles for: the mesh's devices, else the default
    backend's."""
    mesh = jax.sharding.get_abstract_mesh()
    device = getattr(mesh, "abstract_device", None)
    if not mesh.empty and device is not None and getattr(device, "platform", None):
        return str(device.platform)
    return jax.default_backend()


def _auto(*args: Any, **kwargs: Any) -> jax.Array:
    fn = pointwise_as_matmul if traced_platform() == "cpu" else lax.conv_general_dilated
    return fn(*args, **kwargs)


def conv_fn(impl: str) -> Callable[..., jax.Array]:
    """The `conv_general_dilated` for `nn.Conv(conv_general_dilated=...)` of `model.conv_impl`:
    `xla` (lax), `matmul` (1x1 as matmuls) or `auto` (`matmul` when tracing for CPU)."""
    if impl not in IMPLS:
        raise UsageError(f"model.conv_impl={impl!r}: must be one of {IMPLS} (auto: 1x1 "
                         "convolutions as matmuls on CPU, lax convolutions elsewhere)")
    return {"auto": _auto, "xla": lax.conv_general_dilated, "matmul": pointwise_as_matmul}[impl]
