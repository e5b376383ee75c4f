"""Layers whose behaviour is a harness feature chosen by config, usable by any linen model.

`BatchNorm` is batch norm with a configurable statistics group (`config.model.bn_span`, the
MLPerf `model_bn_span`: examples per batch-norm group). Under `jax.jit` the model sees the GLOBAL
batch, so plain batch norm normalises over all of it (XLA all-reduces the statistics across the
sharded batch). MLPerf submissions instead compute statistics over groups of devices (the
per-device batch under pmap, or a few devices' worth with cross-replica BN). Here the batch is
reshaped into [groups, span, ...] and each group is normalised with its own statistics: the
same arithmetic as cross-replica BN over groups of `span / per_device_batch` devices, with no
`axis_name`, no shard_map and no per-workload code. The running averages move towards the mean
over groups of the group statistics, as pmap's `pmean` of batch statistics does.

Parameters and variables have the same names and shapes as `flax.linen.BatchNorm` (params
`scale`, `bias`; `batch_stats` `mean`, `var`) and the class is named `BatchNorm`, so switching a
model between the two changes no checkpoint path.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

from tpubench.errors import UsageError

Initializer = Any


def bn_span(config: Any) -> int:
    """MLPerf `model_bn_span`, examples per batch-norm statistics group: `config.model.bn_span`
    if set, else the global batch under jit (XLA reduces the statistics over the sharded batch)
    and the per-device batch under pmap."""
    if config.model.bn_span:
        return int(config.model.bn_span)
    if config.run.parallelism == "pmap":
        return config.data.global_batch_size // jax.local_device_count()
    return int(config.data.global_batch_size)


def group_stats(x: jax.Array, span: int) -> tuple[jax.Array, jax.Array]:
    """Per-group (mean, var) of `x` [B, ..., C] over groups of `span` consecutive examples
    (0 = one group of the whole batch); each is [B // span, C], computed in float32 as
    E[x^2] - E[x]^2 clipped at 0 (flax's fast variance)."""
    batch = x.shape[0]
    span = span or batch
    if span <= 0 or batch % span:
        raise UsageError(
            f"model.bn_span={span} does not divide the batch of {batch} examples that batch norm "
            "sees (the global batch under jit, the per-device batch under pmap). Use a divisor of "
            "it, or 0 for the whole batch."
        )
    x = x.reshape((batch // span, span) + x.shape[1:])
    x = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    axes = tuple(range(1, x.ndim - 1))
    mean = x.mean(axes)
    mean_sq = jnp.square(x).mean(axes)
    return mean, jnp.maximum(0.0, mean_sq - jnp.square(mean))


class BatchNorm(nn.Module):
    """Batch norm over the last (feature) axis with statistics per group of `span` examples.

    A drop-in for `nn.BatchNorm` (same fields and variables, `axis=-1`); `span=0` is plain batch
    norm over the whole batch. `span` must divide the batch the layer sees.
    """

    use_running_average: bool | None = None
    span: int = 0
    momentum: float = 0.99
    epsilon: float = 1e-5
    dtype: Any = None
    param_dtype: Any = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = nn.initializers.zeros
    scale_init: Initializer = nn.initializers.ones

    @nn.compact
    def __call__(self, x: jax.Array, use_running_average: bool | None = None) -> jax.Array:
        """Normalise `x` [B, ..., C]; in training mode also update the running statistics."""
        use_ra = nn.merge_param(
            "use_running_average", self.use_running_average, use_running_average
        )
        features = (x.shape[-1],)
        ra_mean = self.variable("batch_stats", "mean", jnp.zeros, features, jnp.float32)
        ra_var = self.variable("batch_stats", "var", jnp.ones, features, jnp.float32)
        scale = (self.param("scale", self.scale_init, features, self.param_dtype)
                 if self.use_scale else None)
        bias = (self.param("bias", self.bias_init, features, self.param_dtype)
                if self.use_bias else None)
        out_dtype = self.dtype or jnp.result_type(
            x, *(p for p in (scale, bias) if p is not None))

        if use_ra:
            mean, var = ra_mean.value[None], ra_var.value[None]  # one group: [1, C]
            groups = 1
        else:
            mean, var = group_stats(x, self.span)
            groups = mean.shape[0]
            if not self.is_initializing():
                m = self.momentum
                ra_mean.value = m * ra_mean.value + (1 - m) * mean.mean(0)
                ra_var.value = m * ra_var.value + (1 - m) * var.mean(0)

        # Broadcast [G, C] statistics over each group's [span, ..., C] examples.
        shape = (groups, x.shape[0] // groups) + x.shape[1:]
        stat_shape = (groups,) + (1,) * (len(shape) - 2) + features
        mul = jax.lax.rsqrt(var + self.epsilon)
        if scale is not None:
            mul = mul * scale
        y = (x.reshape(shape) - mean.reshape(stat_shape)) * mul.reshape(stat_shape)
        if bias is not None:
            y = y + bias
        return jnp.asarray(y.reshape(x.shape), out_dtype)
