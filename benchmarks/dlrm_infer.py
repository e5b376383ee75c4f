"""DLRM inference: LoadGen Offline throughput next to the raw jitted batch throughput of the same
model, in one process, as a ratio (issue 15: aim for >= 0.95).

    JAX_PLATFORMS=cpu python benchmarks/dlrm_infer.py [--params=TRAINING_WORKDIR] [--repeats=3]

Both sides use the same compiled executable (`--bucket` rows, one of `Engine.buckets`; the
Offline SUT's batch cap is set to it):
  * raw: that executable called back to back `--calls` times on one batch already on the
    device (no host gather, no transfer, no LoadGen), blocked once at the end; rows/s.
  * Offline: `tpubench infer dlrm --config=mini --scenario=Offline` through `Engine.run`: host
    gather of whole users, transfer, compute, copy back, `QuerySamplesComplete`; LoadGen's
    samples/s (users/s) times the mean rows per user = rows/s.
Runs alternate (raw, Offline) `--repeats` times; the table gives each and the ratio of medians.
The load average is printed with the figures (timings on a busy host are noisy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import jax


def raw_rows_per_s(engine, size: int, calls: int) -> float:
    """Rows/s of the bucket's executable back to back on a device-resident batch."""
    exe = engine.buckets[size].executable
    batch = jax.device_put(engine.qsl.gather(engine.qsl.leading_samples(size), size))
    jax.block_until_ready(exe(engine.params, engine.model_state, batch))
    t = time.perf_counter()
    out = None
    for _ in range(calls):
        out = exe(engine.params, engine.model_state, batch)
    jax.block_until_ready(out)
    return size * calls / (time.perf_counter() - t)


def main() -> None:
    import flax.linen as nn

    from tpubench import config as config_lib
    from tpubench import registry
    from tpubench.infer.runner import Engine
    from tpubench.infer.settings import Mode, Scenario
    from tpubench.infer.spec import inference_spec

    p = argparse.ArgumentParser()
    p.add_argument("--params", default=None, help="training workdir (default: random init)")
    p.add_argument("--profile", default="quick", help="quick (0.5 s Offline) or v0.7 (60 s)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--bucket", type=int, default=4096,
                   help="rows per batch on both sides (a bucket of the spec: 256, 1024, 4096)")
    args = p.parse_args()

    workload = registry.create(config_lib.load("dlrm", "mini", {}))
    spec = inference_spec(workload)
    if args.params:
        from tpubench.loops.checkpoint import restore_variables

        params, state = restore_variables(args.params, workload)
    else:
        params, state = jax.jit(workload.init)(jax.random.key(0))
    engine = Engine.prepare(spec, nn.unbox(params), nn.unbox(state), spec.batch_sizes,
                            {"workload": "dlrm", "config": "mini",
                             "params": args.params or "random_init"})
    rows_per_user = engine.mean_sample_rows()
    size = args.bucket
    if size not in engine.buckets:
        raise SystemExit(f"--bucket={size}: not one of {sorted(engine.buckets)}")
    raws, offlines = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            raws.append(raw_rows_per_s(engine, size, args.calls))
            settings = engine.default_settings(Scenario.OFFLINE, Mode.PERFORMANCE, args.profile)
            summary = engine.run(settings, os.path.join(tmp, f"offline_{i}"), max_batch=size)
            if summary["validity"] != "VALID":
                raise SystemExit(f"Offline run {i} INVALID: {summary['invalid_reasons']}")
            offlines.append(summary["samples_per_s"] * rows_per_user)
    raw, offline = statistics.median(raws), statistics.median(offlines)
    print(f"{jax.devices()[0].device_kind} x{jax.device_count()}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; bucket {size} rows; "
          f"{rows_per_user:.2f} rows per user ({engine.qsl.total_count} users); "
          f"profile {args.profile}")
    print("| run | raw jitted rows/s | Offline rows/s (users/s) | ratio |")
    print("|---|---|---|---|")
    for i, (r, o) in enumerate(zip(raws, offlines, strict=True)):
        print(f"| {i} | {r:,.0f} | {o:,.0f} ({o / rows_per_user:,.0f}) | {o / r:.3f} |")
    print(f"| median | {raw:,.0f} | {offline:,.0f} ({offline / rows_per_user:,.0f}) | "
          f"{offline / raw:.3f} |")


if __name__ == "__main__":
    main()
