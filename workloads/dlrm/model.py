"""DLRM (Naumov et al. 2019) as pure linen modules, the MLPerf Training v0.7 shape.

    dense [B, 13] -> bottom MLP 13-512-256-128 (ReLU) -> x [B, 128]
    sparse [B, 26] -> 26 embedding lookups (dim 128)  -> e [B, 26, 128]
    dot interaction over the 27 vectors [x; e]: the 27*26/2 = 351 pairwise dot products
        (strictly lower triangle), concatenated with x -> [B, 479]
    top MLP 479-1024-1024-512-256-1 (ReLU, last layer linear) -> click logit [B]

Initialisation follows the reference (facebookresearch/dlrm): Linear weights N(0, 2/(fan_in +
fan_out)), biases N(0, 1/fan_out), embedding rows U(-1/sqrt(rows), 1/sqrt(rows)).

Sharding: a table of at least `shard_min_rows` rows carries the logical axes ("embed_rows",
None), which the workload's rules map to the batch axes (data x fsdp): rows are split over every
device. Its rows are padded up to a multiple of `rows_multiple` so that any mesh whose batch-axis
size divides that multiple splits it evenly; the padding rows are never looked up (the input
pipeline hashes each feature into [0, table_size)). Smaller tables are replicated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

EMBED_ROWS = "embed_rows"


def padded_rows(rows: int, shard_min_rows: int, rows_multiple: int) -> int:
    """Rows a table of `rows` logical rows is stored with (padded when it is row-sharded)."""
    if rows >= shard_min_rows and rows_multiple > 1:
        return int(math.ceil(rows / rows_multiple) * rows_multiple)
    return int(rows)


def _bias_init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
    return jax.random.normal(key, shape, dtype) * jnp.sqrt(1.0 / shape[-1]).astype(dtype)


def _embedding_init(logical_rows: int):
    scale = 1.0 / math.sqrt(logical_rows)

    def init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
        return jax.random.uniform(key, shape, dtype, -scale, scale)

    return init


class MLP(nn.Module):
    """Dense layers with ReLU between them; the last one linear unless `final_relu`.

    Replicated: the MLPs hold ~2.4M params, and a width-1 output cannot be split over "tensor".
    """

    features: Sequence[int]
    final_relu: bool = True
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i, width in enumerate(self.features):
            x = nn.Dense(
                width,
                dtype=self.dtype,
                kernel_init=nn.with_logical_partitioning(
                    nn.initializers.variance_scaling(1.0, "fan_avg", "normal"), (None, None)
                ),
                bias_init=nn.with_logical_partitioning(_bias_init, (None,)),
                name=f"dense_{i}",
            )(x)
            if i < len(self.features) - 1 or self.final_relu:
                x = nn.relu(x)
        return x


def dot_interaction(bottom: jax.Array, embedded: jax.Array) -> jax.Array:
    """DLRM "dot" interaction: [B, D] and [B, T, D] -> [B, D + (T+1)*T/2].

    The pairwise dot products of the T+1 vectors, strictly lower triangle (no self products),
    in the reference's row-major order, after the bottom-MLP output itself.
    """
    vectors = jnp.concatenate([bottom[:, None, :], embedded], axis=1)  # [B, T+1, D]
    gram = jnp.einsum("bid,bjd->bij", vectors, vectors)
    rows, cols = np.tril_indices(vectors.shape[1], k=-1)
    return jnp.concatenate([bottom, gram[:, rows, cols]], axis=1)


class DLRM(nn.Module):
    """The click model. Call with dense [B, num_dense] floats and sparse [B, num_tables] ints;
    returns logits [B]."""

    table_sizes: Sequence[int]
    embedding_dim: int = 128
    bottom_mlp: Sequence[int] = (512, 256, 128)
    top_mlp: Sequence[int] = (1024, 1024, 512, 256, 1)
    shard_min_rows: int = 2**16
    rows_multiple: int = 4096
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, dense: jax.Array, sparse: jax.Array, train: bool = False,
                 gathered: Sequence[jax.Array] | None = None) -> jax.Array:
        """`gathered`: each table's looked-up rows [B, D], given by the caller instead of read
        here (the row-sparse update differentiates with respect to them: workloads/dlrm/
        sparse.py); the tables are still declared, so the params are the same."""
        del train  # no dropout or batch norm in DLRM
        if self.bottom_mlp[-1] != self.embedding_dim:
            raise ValueError("the bottom MLP must end at the embedding dim for dot interaction")
        dense = nn.with_logical_constraint(dense.astype(self.dtype), ("batch", None))
        bottom = MLP(self.bottom_mlp, final_relu=True, dtype=self.dtype, name="bottom_mlp")(dense)

        embedded = []
        for t, rows in enumerate(self.table_sizes):
            sharded = rows >= self.shard_min_rows
            table = self.param(
                f"embedding_{t}",
                nn.with_logical_partitioning(
                    _embedding_init(rows), (EMBED_ROWS if sharded else None, None)
                ),
                (padded_rows(rows, self.shard_min_rows, self.rows_multiple), self.embedding_dim),
                jnp.float32,
            )
            embedded.append(jnp.take(table, sparse[:, t], axis=0, mode="clip")
                            if gathered is None else gathered[t])
        stacked = jnp.stack(embedded, axis=1).astype(self.dtype)  # [B, T, D]
        stacked = nn.with_logical_constraint(stacked, ("batch", None, None))

        features = dot_interaction(bottom, stacked)
        logits = MLP(self.top_mlp, final_relu=False, dtype=self.dtype, name="top_mlp")(features)
        return logits[:, 0].astype(jnp.float32)
