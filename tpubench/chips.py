"""What each accelerator can do at best: the denominators of MFU and of roofline bounds.

Peak FLOP/s are the vendors' dense bf16 figures per chip (per device as JAX sees it); HBM is the
chip's memory and bandwidth. CPU has no entry: its peak is measured (`tpubench.perf`).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Chip:
    """One accelerator's public specs (per JAX device)."""

    name: str
    peak_bf16_flops: float  # FLOP/s, dense
    hbm_bytes: float
    hbm_bytes_per_s: float
    peak_fp32_flops: float = 0.0  # 0 = unknown


_G = 1e9
_T = 1e12
_GiB = 2**30

CHIPS: dict[str, Chip] = {
    # Cloud TPU (per chip; v4 and v5p expose one device per chip, megacore).
    "v2": Chip("TPU v2", 45 * _T, 16 * _GiB, 700 * _G),
    "v3": Chip("TPU v3", 123 * _T, 32 * _GiB, 900 * _G),
    "v4": Chip("TPU v4", 275 * _T, 32 * _GiB, 1200 * _G),
    "v5e": Chip("TPU v5e", 197 * _T, 16 * _GiB, 819 * _G),
    "v5p": Chip("TPU v5p", 459 * _T, 95 * _GiB, 2765 * _G),
    "v6e": Chip("TPU v6e", 918 * _T, 32 * _GiB, 1640 * _G),
    # NVIDIA (SXM parts, dense tensor-core bf16).
    "a100": Chip("NVIDIA A100", 312 * _T, 80 * _GiB, 2039 * _G, 19.5 * _T),
    "h100": Chip("NVIDIA H100", 989 * _T, 80 * _GiB, 3350 * _G, 67 * _T),
    "h200": Chip("NVIDIA H200", 989 * _T, 141 * _GiB, 4800 * _G, 67 * _T),
}

# Substrings of `jax.Device.device_kind` -> CHIPS key (checked in order).
_DEVICE_KINDS = (
    ("v6 lite", "v6e"), ("v6e", "v6e"), ("v5 lite", "v5e"), ("v5e", "v5e"), ("v5p", "v5p"),
    ("v5", "v5p"), ("v4", "v4"), ("v3", "v3"), ("v2", "v2"),
    ("h200", "h200"), ("h100", "h100"), ("a100", "a100"),
)


def chip_for_device_kind(device_kind: str) -> Chip | None:
    """The Chip for a `jax.Device.device_kind` string, or None (CPU, unknown GPUs)."""
    kind = device_kind.lower()
    for needle, key in _DEVICE_KINDS:
        if needle in kind:
            return CHIPS[key]
    return None
