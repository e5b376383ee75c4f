"""What each accelerator can do at best: the denominators of MFU and of roofline bounds.

Every figure is the vendor's published number for one *chip*, dense (never "with sparsity"):

- Cloud TPU: the "Peak compute per chip (bf16)" and "HBM capacity and bandwidth" rows of Google's
  system-architecture pages (cloud.google.com/tpu/docs/v2 ... /v6e); v2 from Jouppi et al., "A
  Domain-Specific Supercomputer for Training Deep Neural Networks", CACM 63(7), 2020, Table 3.
- NVIDIA (SXM parts): the product datasheets (A100 80GB, H100 SXM, H200 SXM). The datasheets print
  the tensor-core figures "with sparsity"; the dense figure is half of it (A100: TF32 312 -> 156,
  BF16 624 -> 312; H100/H200: TF32 989 -> 494.5, BF16 1,979 -> 989.5). FP32 is the non-tensor
  figure (19.5 and 67 TFLOP/s).

A chip is not always one JAX device: TPU v2 and v3 show each of a chip's two TensorCores as its
own device, so per device they have half the chip's FLOP/s, HBM and bandwidth (v4 and v5p run
their two cores as one "megacore" device; v5e and v6e have one core). `Chip.per_device_*` and
`chip_count` take care of it; use them, never the per-chip fields, for per-device figures.

Which peak applies depends on the matmul unit that actually runs (`matmul_unit`): bf16 compute
-> the bf16 tensor peak; float32 compute on an NVIDIA Ampere/Hopper GPU -> TF32 tensor cores
(XLA's default and "high" precision), or the plain FP32 units at "highest"; float32 compute on a
TPU -> bf16 MXU passes: 1 at default precision, 3 at "high", 6 at "highest" (jax.lax.Precision),
so the peak is the bf16 figure divided by the passes (derived, no vendor prints it).
CPU has no entry: its peak is measured (`tpubench.platform.perf`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any


@dataclasses.dataclass(frozen=True)
class Chip:
    """One accelerator chip's published specs (per chip; see `per_device_*`)."""

    name: str
    platform: str  # "tpu" | "gpu"
    peak_bf16_flops: float  # FLOP/s, dense tensor-core / MXU bf16
    hbm_bytes: float
    hbm_bytes_per_s: float
    peak_tf32_flops: float = 0.0  # dense TF32 tensor cores (NVIDIA Ampere+); 0 = none
    peak_fp32_flops: float = 0.0  # plain FP32 units (NVIDIA); 0 = none (TPU: bf16 passes)
    devices_per_chip: int = 1  # JAX devices one chip shows up as (TPU v2/v3: 2 TensorCores)

    def peak(self, unit: str) -> float:
        """Per-chip FLOP/s of a matmul unit: "bf16", "tf32" or "fp32" (0.0 if the chip has none)."""
        return {"bf16": self.peak_bf16_flops, "tf32": self.peak_tf32_flops,
                "fp32": self.peak_fp32_flops}[unit]

    def per_device_flops(self, dtype: str, precision: str | None = None) -> float:
        """Peak FLOP/s of ONE JAX device computing in `dtype` at matmul `precision` (a value of
        `jax_default_matmul_precision`; None = XLA's default). 0.0 when unknown."""
        mode = matmul_unit(self, dtype, precision)
        if mode is None:
            return 0.0
        unit, passes = mode
        return self.peak(unit) / passes / self.devices_per_chip

    @property
    def per_device_hbm_bytes(self) -> float:
        """HBM one JAX device owns."""
        return self.hbm_bytes / self.devices_per_chip

    @property
    def per_device_hbm_bytes_per_s(self) -> float:
        """HBM bandwidth of one JAX device."""
        return self.hbm_bytes_per_s / self.devices_per_chip


_G = 1e9
_T = 1e12
_GiB = 2**30

CHIPS: dict[str, Chip] = {
    # Cloud TPU. v2/v3: 2 TensorCores per chip, each its own JAX device. v4/v5p: 2 cores run as
    # one megacore device. v5e/v6e: 1 core per chip.
    "v2": Chip("TPU v2", "tpu", 45 * _T, 16 * _GiB, 700 * _G, devices_per_chip=2),
    "v3": Chip("TPU v3", "tpu", 123 * _T, 32 * _GiB, 900 * _G, devices_per_chip=2),
    "v4": Chip("TPU v4", "tpu", 275 * _T, 32 * _GiB, 1200 * _G),
    "v5e": Chip("TPU v5e", "tpu", 197 * _T, 16 * _GiB, 819 * _G),
    "v5p": Chip("TPU v5p", "tpu", 459 * _T, 95 * _GiB, 2765 * _G),
    "v6e": Chip("TPU v6e", "tpu", 918 * _T, 32 * _GiB, 1640 * _G),
    # NVIDIA SXM parts: bf16, TF32 (dense tensor cores), FP32 (non-tensor).
    "a100": Chip("NVIDIA A100", "gpu", 312 * _T, 80 * _GiB, 2039 * _G, 156 * _T, 19.5 * _T),
    "h100": Chip("NVIDIA H100", "gpu", 989.5 * _T, 80 * _GiB, 3350 * _G, 494.5 * _T, 67 * _T),
    "h200": Chip("NVIDIA H200", "gpu", 989.5 * _T, 141 * _GiB, 4800 * _G, 494.5 * _T, 67 * _T),
}

# Substrings of `jax.Device.device_kind` -> CHIPS key (checked in order: "v5 lite" before "v5").
_DEVICE_KINDS = (
    ("v6 lite", "v6e"), ("v6e", "v6e"), ("v5 lite", "v5e"), ("v5e", "v5e"), ("v5p", "v5p"),
    ("v5", "v5p"), ("v4", "v4"), ("v3", "v3"), ("v2", "v2"),
    ("h200", "h200"), ("h100", "h100"), ("a100", "a100"),
)

# jax_default_matmul_precision values for float32 inputs (jax.lax.Precision's documentation).
_DEFAULT = ("default", "fastest", "bfloat16")
_HIGH = ("high", "tensorfloat32")
_HIGHEST = ("highest", "float32")
_TPU_PASSES = {**dict.fromkeys(_DEFAULT, 1), **dict.fromkeys(_HIGH, 3),
               **dict.fromkeys(_HIGHEST, 6)}
_HALF_DTYPES = ("bfloat16", "float16")


def matmul_unit(chip: Chip, dtype: str, precision: str | None = None) -> tuple[str, int] | None:
    """(unit, passes) that runs a `dtype` matmul on `chip` at `precision` (module doc), or None
    when that combination has no published peak (e.g. an FP8 dot-algorithm preset)."""
    if dtype in _HALF_DTYPES:
        return "bf16", 1
    if dtype != "float32":
        return None
    p = precision or "default"
    if p.upper() == p:  # a DotAlgorithmPreset name, e.g. BF16_BF16_F32_X3, TF32_TF32_F32
        passes = int(p.rsplit("_X", 1)[1]) if "_X" in p else 1
        unit = {"BF16": "bf16", "F16": "bf16", "TF32": "tf32", "F32": "fp32"}.get(
            p.split("_", 1)[0])
    elif chip.platform == "tpu":
        unit, passes = "bf16", _TPU_PASSES.get(p, 0)
    elif p in _HIGHEST:
        unit, passes = "fp32", 1
    else:
        unit, passes = ("tf32" if chip.peak_tf32_flops else "fp32"), 1
    if unit is None or not passes or not chip.peak(unit):
        return None
    return unit, passes


def chip_for_device_kind(device_kind: str) -> Chip | None:
    """The Chip for a `jax.Device.device_kind` string, or None (CPU, unknown GPUs)."""
    kind = device_kind.lower()
    for needle, key in _DEVICE_KINDS:
        if needle in kind:
            return CHIPS[key]
    return None


def chip_count(devices: list[Any]) -> int:
    """Physical chips behind `devices` (TPU v2/v3: two devices per chip; CPU: the devices)."""
    if not devices or devices[0].platform == "cpu":
        return len(devices)
    chip = chip_for_device_kind(devices[0].device_kind)
    return math.ceil(len(devices) / (chip.devices_per_chip if chip else 1))


def platform_name(devices: list[Any]) -> str:
    """The platform as run summaries and MLPerf `submission_platform` name it: chips x kind, e.g.
    '8xTPU_v5p' (16 devices of a v3: '8xTPU_v3'), '1xNVIDIA_H200', '1xcpu'."""
    kind = devices[0].device_kind if devices[0].platform != "cpu" else "cpu"
    return f"{chip_count(devices)}x{kind.replace(' ', '_')}"
