"""ResNet-50 throughput on whatever JAX sees: init + AOT compile time, step time, images/s and
MFU (against the chip table's peak for the matmul unit that runs the dtype, per JAX device; on
CPU the measured matmul peak), for the mini and for full ResNet-50 on synthetic data generated on
device, through the harness's own compiled train step (`JitEngine.compile`, K=1).

    JAX_PLATFORMS=cpu python benchmarks/resnet_throughput.py --full_batch=32 --dtype=float32
    python benchmarks/resnet_throughput.py --full_batch=256 --dtype=bfloat16 --steps=20  # GPU/TPU
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import jax

from tpubench import config as config_lib
from tpubench import mesh as mesh_lib
from tpubench import registry
from tpubench.loops import engine
from tpubench.platform import chips, perf


def measure(name: str, overrides: dict, steps_timed: int, workload: str = "resnet") -> dict:
    """Compile `workload`'s `name` config's train step (synthetic data, K=1), run it
    `steps_timed` times after one untimed run, and return the figures (median step time;
    `examples_per_s` = `images_per_s` = batch / step time; MFU NaN if above 100%: a bug). Any
    workload with synthetic data works (gpu_check measures BERT-large with it)."""
    cfg = config_lib.load(workload, name, {**overrides, "data.source": "synthetic",
                                           "run.steps_per_dispatch": 1})
    w = registry.create(cfg)
    t = time.perf_counter()
    eng = engine.JitEngine(w, mesh_lib.build_mesh(cfg))
    compiled = eng.compile(1, synthetic=True)
    state = eng.init_state(cfg.run.seed)
    jax.block_until_ready(state)
    init_s = time.perf_counter() - t
    state, m = compiled.train(state)  # first run (allocations), not timed
    jax.block_until_ready(m)
    times = []
    for _ in range(steps_timed):
        t = time.perf_counter()
        state, m = compiled.train(state)
        jax.block_until_ready(m)
        times.append(time.perf_counter() - t)
    step_s = statistics.median(times)
    devices = jax.devices()
    peak = perf.peak_flops(devices, cfg.model.dtype)
    flops = compiled.flops_per_step
    loss = float(m["last_loss"])
    return {"workload": workload, "config": name, "dtype": cfg.model.dtype,
            "batch": cfg.data.global_batch_size, "image": cfg.data.get("image_size"),
            "device_kind": devices[0].device_kind,
            "devices": len(devices), "chips": chips.chip_count(devices),
            "matmul_precision": perf.matmul_precision(), "init_compile_s": init_s,
            "step_s": step_s, "steps_timed": steps_timed,
            "images_per_s": cfg.data.global_batch_size / step_s,
            "examples_per_s": cfg.data.global_batch_size / step_s, "gflop_per_step": flops / 1e9,
            "mfu": perf.mfu(flops, 1, step_s, peak), "peak_gflops": peak / 1e9,
            "last_loss": loss if math.isfinite(loss) else None}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--full_batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    args = p.parse_args()
    rows = [measure("mini", {}, 20),
            measure("full", {"data.global_batch_size": args.full_batch, "eval.batch_size":
                             args.full_batch, "model.dtype": args.dtype}, args.steps)]
    print(f"{jax.devices()[0].device_kind}: peak {rows[1]['peak_gflops']:.1f} GFLOP/s "
          f"({args.dtype}; CPU: measured f32 matmul), {jax.device_count()} device(s)")
    print("| config | batch | image | init+compile s | step s | images/s | GFLOP/step | MFU |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['config']} | {r['batch']} | {r['image']} | {r['init_compile_s']:.1f} | "
              f"{r['step_s']:.3f} | {r['images_per_s']:.1f} | {r['gflop_per_step']:.2f} | "
              f"{100 * r['mfu']:.1f}% |")


if __name__ == "__main__":
    main()
