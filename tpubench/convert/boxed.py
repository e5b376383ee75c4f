"""Shape and value of a param leaf that may be boxed (`nn.Partitioned`), for the converters."""

from __future__ import annotations

from typing import Any


def shape(x: Any) -> tuple[int, ...]:
    """The shape of `x`, a plain or abstract array or an `nn.Partitioned` box (its `.value`)."""
    return tuple(getattr(x, "value", x).shape)


def put(x: Any, value: Any) -> Any:
    """`value` in place of `x`: inside `x`'s box (same logical axes) when `x` is boxed."""
    return x.replace_boxed(value) if hasattr(x, "replace_boxed") else value
