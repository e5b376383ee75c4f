"""DLRM train step time as the embedding tables grow: dense vs row-sparse update (issue 17.1).

A DLRM of `--tables` tables of R rows each (dim `--dim`, batch `--batch`, small MLPs, synthetic
ids uniform over each table), one jitted train step through the harness's `make_train_step`
with the state donated (as the engine does), for R in `--rows` (default 10^4, 10^5, 10^6): the
median step time of the dense update (`optimizer.sparse_embedding_update=false`: a gradient of
every row, SGD over every row) and of the row-sparse one (workloads/dlrm/sparse.py), measured
alternately in one process. The sparse step should stay flat as R grows 10x and 100x; the
dense one grows with the table bytes.

    JAX_PLATFORMS=cpu python benchmarks/dlrm_sparse.py [--rows=10000,100000,1000000] \\
        [--tables=8] [--dim=64] [--batch=256] [--steps=10] [--repeats=3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import steps


def step_times(rows: int, sparse: bool, args) -> list[float]:
    """Seconds per step of `args.steps` blocked steps after one warm-up step."""
    cfg = config_lib.load("dlrm", "smoke", {
        "model.table_sizes": (rows,) * args.tables, "model.embedding_dim": args.dim,
        "model.bottom_mlp": (args.dim, args.dim), "model.top_mlp": (args.dim, 1),
        "run.embedding_shard_min_rows": 2**40, "data.global_batch_size": args.batch,
        "optimizer.sparse_embedding_update": sparse})
    w = registry.create(cfg)
    state = nn.meta.unbox(jax.jit(steps.boxed_init_fn(w))(jax.random.PRNGKey(0)))
    step = jax.jit(steps.make_train_step(w), donate_argnums=0)
    batches = [w.synthetic_batch(jax.random.PRNGKey(i), args.batch) for i in range(4)]
    state, m = step(state, batches[0])
    jax.block_until_ready(m)
    times = []
    for i in range(args.steps):
        t = time.perf_counter()
        state, m = step(state, batches[i % 4])
        jax.block_until_ready((state.params, m))
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", default="10000,100000,1000000")
    p.add_argument("--tables", type=int, default=8)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    rows = [int(r) for r in args.rows.split(",")]
    print(f"{args.tables} tables x dim {args.dim}, batch {args.batch}, {jax.devices()[0].platform};"
          f" median step ms over {args.repeats} alternating repeats of {args.steps} steps")
    base = {}
    for r in rows:
        med = {True: [], False: []}
        for _ in range(args.repeats):
            for sparse in (False, True):
                med[sparse].append(statistics.median(step_times(r, sparse, args)))
        dense_ms, sparse_ms = (statistics.median(med[k]) * 1e3 for k in (False, True))
        base.setdefault("dense", dense_ms)
        base.setdefault("sparse", sparse_ms)
        table_mb = r * args.tables * args.dim * 4 / 1e6
        print(f"rows {r:>10,} ({table_mb:>8,.0f} MB of tables): dense {dense_ms:9.2f} ms "
              f"(x{dense_ms / base['dense']:.2f})  sparse {sparse_ms:9.2f} ms "
              f"(x{sparse_ms / base['sparse']:.2f})  dense/sparse {dense_ms / sparse_ms:.1f}")


if __name__ == "__main__":
    main()
