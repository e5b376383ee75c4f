"""Target topologies for `tpubench fit`: compile a config for hardware you do not have.

A target is written `KIND:SHAPE`:

- TPU slices, with the chip grid JAX/libtpu expect: `v4:2x2x1`, `v5p:2x2x2`, `v5p:4x4x4` (3-D, v4
  and v5p), `v5e:2x2`, `v6e:4x4` (2-D). Their devices are compile-only devices made by libtpu
  (`jax.experimental.topologies.get_topology_desc`); libtpu is the optional `tpu` extra
  (`pip install 'tpubench[tpu]'`) and runs on a CPU-only host.
- `cpu:N`: the N CPU devices of this process (N must equal `jax.device_count()`; set
  `JAX_NUM_CPU_DEVICES=N` to get them).
- `gpu:KINDxN`, e.g. `gpu:h100x8`: JAX has no compile-only GPU devices, so this needs the N GPUs
  themselves (a GPU host, or a multi-host job); its parsed figures (chip, count) need nothing.

`parse()` is pure; `Topology.devices()` imports JAX (and libtpu) only when called.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Sequence
from typing import Any

from tpubench.errors import UsageError
from tpubench.platform.chips import CHIPS, Chip

KNOWN_FORMS = (
    "v4:AxBxC and v5p:AxBxC (3-D chip grid, e.g. v4:2x2x1, v5p:2x2x2, v5p:4x4x4); "
    "v5e:AxB and v6e:AxB (one of 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16); "
    "cpu:N (e.g. cpu:8); gpu:KINDxN with KIND in a100, h100, h200 (e.g. gpu:h100x8)"
)

# Per TPU generation: grid rank, libtpu chip config, the gcloud accelerator-type prefix and how many
# TensorCores that name counts per chip (v4/v5p names count cores, v5e/v6e names count chips).
_TPU_KINDS: dict[str, dict[str, Any]] = {
    "v4": {"rank": 3, "chip_config": "megacore", "gcloud": "v4", "cores_per_chip": 2},
    "v5p": {"rank": 3, "chip_config": "megacore", "gcloud": "v5p", "cores_per_chip": 2},
    "v5e": {"rank": 2, "chip_config": "default", "gcloud": "v5litepod", "cores_per_chip": 1},
    "v6e": {"rank": 2, "chip_config": "default", "gcloud": "v6e", "cores_per_chip": 1},
}
_2D_SHAPES = {(1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)}
_SMALL_3D_SHAPES = {(2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4)}  # below these, dims are 4k
_CHIPS_PER_HOST = 4  # TPU VM hosts in a multi-host slice hold 2x2 chips
_SINGLE_HOST_2D_CHIPS = 8  # v5e/v6e 2x4 (and smaller) are one host
_GPUS_PER_HOST = 8
_GPU_KINDS = ("a100", "h100", "h200")


@dataclasses.dataclass(frozen=True)
class Topology:
    """A parsed target. `chip` is a key of `tpubench.platform.chips.CHIPS`, or "cpu"."""

    name: str  # canonical spelling, e.g. "v5p:2x2x2"
    platform: str  # "tpu" | "cpu" | "gpu"
    chip: str
    chip_count: int
    shape: tuple[int, ...]  # the chip grid (TPU) or (count,) (CPU, GPU)
    num_hosts: int

    @property
    def chip_spec(self) -> Chip | None:
        """Peak FLOP/s and HBM of one chip (None for CPU, whose peak is measured)."""
        return CHIPS.get(self.chip)

    @property
    def device_count(self) -> int:
        """JAX devices: one per chip for every kind here (v4/v5p run as megacore; only TPU v2/v3,
        not targets here, show two per chip)."""
        spec = self.chip_spec
        return self.chip_count * (spec.devices_per_chip if spec else 1)

    @property
    def jax_topology(self) -> str:
        """The name libtpu's topology API takes ("v5p:2x2x2"); "" when not a TPU."""
        return self.name if self.platform == "tpu" else ""

    @property
    def accelerator_type(self) -> str:
        """The gcloud `--accelerator-type` of this slice ("v5p-16" for v5p:2x2x2); "" if none."""
        if self.platform != "tpu":
            return ""
        kind = _TPU_KINDS[self.chip]
        return f"{kind['gcloud']}-{self.chip_count * kind['cores_per_chip']}"

    def tpu_topology_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `get_topology_desc` for this slice (TPU only)."""
        if self.platform != "tpu":
            raise UsageError(f"{self.name} is not a TPU slice: it has no libtpu topology.")
        grid = self.shape + (1,) * (3 - len(self.shape))
        if _TPU_KINDS[self.chip]["rank"] == 3:
            wrap = (all(d >= 4 for d in grid),) * 3  # full 4x4x4 cubes and up are tori
        else:
            wrap = tuple(d == 16 for d in self.shape) + (False,)
        return {
            "topology_name": self.jax_topology,
            "platform": "tpu",
            "chip_config_name": _TPU_KINDS[self.chip]["chip_config"],
            "chips_per_host_bounds": (1, 1, 1) if self.chip_count == 1 else (2, 2, 1),
            "num_slices": 1,
            "wrap": wrap,
        }

    def devices(self) -> list[Any]:
        """The `jax.Device`s to build a mesh from and AOT-compile for (see module doc)."""
        if self.platform == "tpu":
            return _tpu_devices(self)
        import jax

        if self.platform == "cpu":
            have = jax.device_count()
            if have != self.chip_count:
                raise UsageError(
                    f"Target {self.name} needs {self.chip_count} CPU devices, this process has "
                    f"{have}. Start it with JAX_NUM_CPU_DEVICES={self.chip_count} (or XLA_FLAGS="
                    f"--xla_force_host_platform_device_count={self.chip_count})."
                )
            return list(jax.devices())
        devices = [d for d in jax.devices() if d.platform == "gpu"]
        if len(devices) != self.chip_count or not all(
            self.chip in d.device_kind.lower() for d in devices
        ):
            kinds = sorted({d.device_kind for d in jax.devices()})
            raise UsageError(
                f"Target {self.name} needs {self.chip_count} {self.chip.upper()} GPUs in this "
                f"job; it sees {jax.device_count()} device(s) of kind {', '.join(kinds)}. JAX has "
                "no compile-only GPU devices: run `fit` on the GPUs, or fit a TPU or cpu:N target."
            )
        return devices


def _tpu_devices(topology: Topology) -> list[Any]:
    try:
        import libtpu  # noqa: F401  (only to give a clear error when it is missing)
    except ImportError:
        raise UsageError(
            f"Compiling for {topology.name} needs libtpu, the optional `tpu` extra: "
            "pip install 'tpubench[tpu]' (or pip install libtpu). It runs on a CPU-only host."
        ) from None
    from jax.experimental import topologies

    # Compile-only devices touch no chip, so two processes may hold them at once (two
    # `tpubench fit`s, or two test workers); without this the second one's libtpu fails on its
    # multi-process lockfile ("Internal error when accessing libtpu multi-process lockfile").
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    quiet_libtpu_off_tpu(topology)
    try:
        desc = topologies.get_topology_desc(**topology.tpu_topology_kwargs())
    except Exception as e:  # libtpu rejects a grid it does not know: bad input, not a crash
        raise UsageError(f"libtpu cannot build {topology.name}: {e}. Known forms: "
                         f"{KNOWN_FORMS}.") from e
    return list(desc.devices)


def quiet_libtpu_off_tpu(topology: Topology) -> None:
    """On a host with no TPU chips, tell libtpu the slice and the worker before it loads.

    Without them libtpu asks the GCE metadata server for both, fails off Cloud TPU, and prints
    a warning, "Logging before InitGoogle()" and an `INVALID_ARGUMENT: unexpected worker
    hostname` trace that nobody can act on (issue 33); the compile-only devices are the same
    either way (measured). On a TPU VM (chips under /dev/accel* or /dev/vfio/) nothing is set:
    the metadata server answers there, and the real backend must read it."""
    import glob

    if glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"):
        return
    os.environ.setdefault("TPU_ACCELERATOR_TYPE", topology.accelerator_type)
    os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")


def _unknown(text: str, why: str = "") -> UsageError:
    return UsageError(f"Unknown topology {text!r}{': ' + why if why else ''}. Known forms: "
                      f"{KNOWN_FORMS}.")


def _dims(text: str, spec: str) -> tuple[int, ...]:
    if not re.fullmatch(r"[1-9]\d*(x[1-9]\d*)*", spec):
        raise _unknown(text, f"{spec!r} is not a grid like 2x2x2")
    return tuple(int(d) for d in spec.split("x"))


def _tpu_hosts(kind: str, chips: int) -> int:
    if _TPU_KINDS[kind]["rank"] == 2 and chips <= _SINGLE_HOST_2D_CHIPS:
        return 1
    return max(1, chips // _CHIPS_PER_HOST)


def parse(text: str) -> Topology:
    """Parse a target name (see module doc); anything else is a `UsageError` listing the forms."""
    kind, sep, spec = text.strip().lower().partition(":")
    if not sep or not spec:
        raise _unknown(text)
    if kind in _TPU_KINDS:
        shape = _dims(text, spec)
        rank = _TPU_KINDS[kind]["rank"]
        if len(shape) != rank:
            raise _unknown(text, f"{kind} grids have {rank} dimensions")
        if rank == 2 and shape not in _2D_SHAPES:
            shapes = ", ".join(map(_fmt, sorted(_2D_SHAPES, key=math.prod)))
            raise _unknown(text, f"{kind} slices are {shapes}")
        if rank == 3 and shape not in _SMALL_3D_SHAPES and any(d % 4 for d in shape):
            raise _unknown(text, f"{kind} grids are 2x2x1, 2x2x2, 2x2x4, 2x4x4 or multiples of 4")
        chips = math.prod(shape)
        return Topology(f"{kind}:{_fmt(shape)}", "tpu", kind, chips, shape,
                        _tpu_hosts(kind, chips))
    if kind == "cpu":
        if not re.fullmatch(r"[1-9]\d*", spec):
            raise _unknown(text, "cpu takes a device count, e.g. cpu:8")
        count = int(spec)
        return Topology(f"cpu:{count}", "cpu", "cpu", count, (count,), 1)
    if kind == "gpu":
        match = re.fullmatch(r"([a-z]\w*?)x([1-9]\d*)", spec)
        if not match or match[1] not in _GPU_KINDS:
            raise _unknown(text, f"GPU kinds are {', '.join(_GPU_KINDS)}")
        count = int(match[2])
        return Topology(f"gpu:{match[1]}x{count}", "gpu", match[1], count, (count,),
                        math.ceil(count / _GPUS_PER_HOST))
    raise _unknown(text)


def _fmt(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)
