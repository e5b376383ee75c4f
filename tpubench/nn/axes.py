"""Logical axis names of 2-D conv kernels and the rules that map them onto the mesh.

A Flax conv kernel is [h, w, in, out]; every 2-D conv model in the suite annotates it with
`CONV_AXES` (`tpubench.nn.initializers.conv_kernel_init`), and its workload's
`logical_axis_rules()` maps those names with `conv_rules()`. The names stay out of
`tpubench.mesh.DEFAULT_RULES`: a workload says how its convs are split (MiniGo replicates them).
"""

from __future__ import annotations

from typing import Any

CONV_AXES = ("conv_h", "conv_w", "conv_in", "conv_out")


def conv_rules(out: Any = "tensor") -> tuple[tuple[str, Any], ...]:
    """(logical name, mesh axis) rules of `CONV_AXES`: h, w and in replicated (None), the
    output channels over `out` ("tensor" by default; None replicates the whole kernel). In
    CONV_AXES order, for a workload's `logical_axis_rules()` (flax: the first match wins)."""
    return (("conv_h", None), ("conv_w", None), ("conv_in", None), ("conv_out", out))
