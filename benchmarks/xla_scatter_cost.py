"""What XLA's cost analysis charges for a gather and a scatter-add of a few rows of a big table.

`tpubench fit` reads "bytes accessed" from XLA's `cost_analysis()`. For DLRM's row-sparse update
(issue 17.1) that figure is not the traffic: XLA's cost model charges a gather with the whole
table it reads from, and a scatter-add with the whole table read and written, however few rows
are touched. This prints both, for 256 rows of 64 float32 out of tables of 10^4 to 10^6 rows,
next to the bytes the rows themselves occupy.

    JAX_PLATFORMS=cpu python benchmarks/xla_scatter_cost.py
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

ROWS_TOUCHED, DIM = 256, 64


def costs(rows: int) -> tuple[float, float]:
    """(gather, scatter-add) bytes accessed per XLA's cost analysis, compiled for this backend."""
    table = jax.ShapeDtypeStruct((rows, DIM), jnp.float32)
    index = jax.ShapeDtypeStruct((ROWS_TOUCHED,), jnp.int32)
    update = jax.ShapeDtypeStruct((ROWS_TOUCHED, DIM), jnp.float32)
    gather = jax.jit(lambda t, i: t[i]).lower(table, index).compile()
    scatter = jax.jit(lambda t, i, u: t.at[i].add(u), donate_argnums=0).lower(
        table, index, update).compile()
    return (float(gather.cost_analysis()["bytes accessed"]),
            float(scatter.cost_analysis()["bytes accessed"]))


def main() -> None:
    touched = ROWS_TOUCHED * DIM * 4
    print(f"backend {jax.default_backend()}; {ROWS_TOUCHED} rows x {DIM} float32 touched "
          f"({touched / 1e6:.3f} MB)")
    print("| table rows | table MB | gather: XLA bytes accessed (MB) | scatter-add (MB) |")
    print("|---|---|---|---|")
    for rows in (10_000, 100_000, 1_000_000):
        g, s = costs(rows)
        print(f"| {rows:,} | {rows * DIM * 4 / 1e6:,.1f} | {g / 1e6:,.3f} | {s / 1e6:,.3f} |")


if __name__ == "__main__":
    main()
