"""Performance figures: FLOPs from XLA's cost analysis, peak FLOP/s per device, MFU.

Accelerator peaks come from `tpubench.platform.chips`, per JAX device and for the matmul unit that
actually runs (bf16; TF32 for float32 on NVIDIA Ampere/Hopper unless `jax_default_matmul_precision`
asks for "highest"; bf16 passes on TPU). A CPU's is measured (a large f32 matmul, best of several)
because no table knows this machine. A peak is the best the machine has ever shown, so the cache
under `tpubench.paths.cache_dir()` keeps the maximum of all measurements: one
taken while other jobs loaded the CPU cannot stick (it once read 50 instead of 208 GFLOP/s here).

An MFU above 100% cannot happen: it means the peak or the FLOP count is wrong. `mfu` then warns
(`MFUAbovePeakWarning`) and returns NaN rather than raising, so a finished run still writes its
summary (its time and throughput are sound) while the impossible figure is never printed as one.
"""

from __future__ import annotations

import json
import os
import platform
import time
import warnings
from typing import Any

import jax
import jax.numpy as jnp

from tpubench import paths
from tpubench.platform import chips


class MFUAbovePeakWarning(RuntimeWarning):
    """An MFU above 100%: the peak table or the FLOP count is wrong, the figure is withheld."""


def flops_of(lowered_or_compiled: Any) -> float:
    """Total FLOPs of one call, from XLA's `cost_analysis()` (0.0 if XLA reports none).

    Use on ONE step, not a `lax.scan` block: XLA counts a loop body once, not per trip.
    """
    cost = lowered_or_compiled.cost_analysis()
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else {}
    return float((cost or {}).get("flops", 0.0))


def _cpu_key() -> str:
    cpu = platform.processor() or "cpu"
    return f"{platform.machine()}-{cpu}-{os.cpu_count()}-jax{jax.__version__}"


def measure_cpu_peak_flops(n: int = 2048, repeats: int = 3) -> float:
    """Best-of-`repeats` f32 matmul FLOP/s on the default CPU device (all its threads)."""
    a = jnp.ones((n, n), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f(a).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best


def cpu_peak_flops() -> float:
    """This machine's CPU peak: max(a fresh ~0.3 s measurement, every earlier one), cached per
    machine and jax version."""
    path = paths.cache_dir() / "cpu_peak.json"
    key = _cpu_key()
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = {}
    peak = max(measure_cpu_peak_flops(), float(cached.get(key, 0.0)))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        cached[key] = peak
        path.write_text(json.dumps(cached, indent=1))
    except OSError:
        pass
    return peak


def matmul_precision() -> str | None:
    """The process's `jax_default_matmul_precision` (None = XLA's default)."""
    return jax.config.jax_default_matmul_precision


def peak_flops(devices: list[Any] | None = None, dtype: str = "bfloat16",
               precision: str | None = None) -> float:
    """Peak FLOP/s of all `devices` together, for `dtype` compute at matmul `precision` (default:
    `matmul_precision()`). CPU: the machine's measured matmul peak, shared by all simulated CPU
    devices. 0.0 when unknown (an unlisted GPU, an FP8 dot algorithm)."""
    devices = devices or jax.devices()
    d = devices[0]
    if d.platform == "cpu":
        return cpu_peak_flops()
    chip = chips.chip_for_device_kind(d.device_kind)
    if chip is None:
        return 0.0
    precision = matmul_precision() if precision is None else precision
    return chip.per_device_flops(dtype, precision) * len(devices)


def mfu(flops_per_step: float, steps: int, seconds: float, peak: float) -> float:
    """Model FLOPs utilisation: achieved FLOP/s over `peak` (the same devices' `peak_flops`).

    0.0 when the peak or time is unknown; NaN plus an `MFUAbovePeakWarning` when the result is
    above 1.0, which no hardware does (module doc).
    """
    if seconds <= 0 or peak <= 0:
        return 0.0
    value = flops_per_step * steps / seconds / peak
    if value > 1.0:
        warnings.warn(
            f"MFU {100 * value:.0f}% is above 100%: the peak ({peak / 1e12:.3g} TFLOP/s) or the "
            f"FLOP count ({flops_per_step:.3g} per step) is wrong; MFU withheld (NaN).",
            MFUAbovePeakWarning, stacklevel=2)
        return float("nan")
    return value

