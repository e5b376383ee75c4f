"""The compute dtype a config names (`model.dtype`)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp


def compute_dtype(name: str, *, else_float32: bool = False) -> Any:
    """The dtype `name` (a config's `model.dtype`) stands for.

    Default: `jnp.dtype(name)`, any name numpy knows ("float32", "bfloat16", "float16"); an
    unknown name raises TypeError (GNMT, DLRM, Transformer, BERT read it so).
    `else_float32=True`: `jnp.bfloat16` for "bfloat16" and `jnp.float32` for any other value,
    never an error (the vision workloads, MiniGo, RNN-T and 3D U-Net read it so; kept, so that
    e.g. "float16" there still computes in float32). This form returns the scalar types
    (`jnp.bfloat16`), the default one a `numpy.dtype`, as each site did before.
    """
    if else_float32:
        return jnp.bfloat16 if name == "bfloat16" else jnp.float32
    return jnp.dtype(name)
