"""Keep JAX off libtpu on a host without a TPU, with no environment variable to set.

With JAX_PLATFORMS unset, JAX initialises every registered backend and tries the TPU one
(priority 300) whether or not a chip is attached. It skips CUDA when no NVIDIA device file exists
(`jax._src.xla_bridge.backends`), but not TPU: when `libtpu` is installed (the `tpu` extra, for
`tpubench fit`), every run on a CPU host loads libtpu, which prints errors about TPU metadata and
worker hostnames and installs its failure signal handler (a crash trace on SIGTERM).

`select_platforms()` does what JAX does for CUDA, for TPU too: when JAX_PLATFORMS is unset and
this host shows no TPU (the PCI ids JAX's own `hardware_utils` knows, `/dev/accel*`, `/dev/vfio/`)
and no GPU either, it sets JAX_PLATFORMS=cpu (or the `jax_platforms` option, when JAX is already
imported) before any backend starts. It changes nothing on a TPU or GPU host, nothing when the
user set JAX_PLATFORMS (even to ""), and nothing after JAX picked its backends. `tpubench fit`
still compiles for TPU topologies: libtpu's compile-only devices
(`jax.experimental.topologies.get_topology_desc`) load libtpu themselves, whatever the platforms.
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import MutableMapping

# jax/_src/hardware_utils.py: Google's PCI vendor id and the device ids of TPU chips.
GOOGLE_PCI_VENDOR = "0x1ae0"
TPU_PCI_DEVICE_IDS = ("0x0027", "0x0056", "0x005e", "0x0062", "0x0063", "0x006f", "0x0076")
_NVIDIA_DEVICE_FILES = ("dev/nvidia0", "dev/nvidiactl", "dev/dxg")


def _read(path: pathlib.Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def tpu_visible(root: str | os.PathLike = "/") -> bool:
    """True when this host shows a TPU: a Google TPU PCI device, /dev/accel*, or /dev/vfio/N."""
    root = pathlib.Path(root)
    for vendor in root.glob("sys/bus/pci/devices/*/vendor"):
        if _read(vendor) == GOOGLE_PCI_VENDOR and _read(vendor.parent / "device") in (
            TPU_PCI_DEVICE_IDS
        ):
            return True
    if any(root.glob("dev/accel*")):
        return True
    vfio = root / "dev" / "vfio"
    return vfio.is_dir() and any(p.name != "vfio" for p in vfio.iterdir())


def gpu_visible(root: str | os.PathLike = "/") -> bool:
    """True when this host shows an NVIDIA or AMD GPU (the device files JAX itself checks)."""
    root = pathlib.Path(root)
    if any((root / f).exists() for f in _NVIDIA_DEVICE_FILES):
        return True
    return (root / "sys/class/kfd/kfd/topology/nodes").is_dir()


def platforms_for_host(
    environ: MutableMapping[str, str] | None = None, root: str | os.PathLike = "/"
) -> str | None:
    """"cpu" when JAX should be kept to the CPU (no TPU, no GPU, JAX_PLATFORMS unset), else None
    (leave JAX's own choice alone)."""
    environ = os.environ if environ is None else environ
    if "JAX_PLATFORMS" in environ or "JAX_FORCE_TPU_INIT" in environ:
        return None
    if tpu_visible(root) or gpu_visible(root):
        return None
    return "cpu"


def select_platforms(environ: MutableMapping[str, str] | None = None) -> str | None:
    """Apply `platforms_for_host()` before JAX starts a backend; returns what it set, if any."""
    environ = os.environ if environ is None else environ
    platforms = platforms_for_host(environ)
    if platforms is None:
        return None
    jax = sys.modules.get("jax")
    if jax is None:
        environ["JAX_PLATFORMS"] = platforms  # read by JAX when it is imported
        return platforms
    try:
        from jax._src import xla_bridge  # private: if it moves, do nothing rather than fail

        started = xla_bridge.backends_are_initialized()
    except (ImportError, AttributeError):
        return None
    if started or jax.config.jax_platforms:
        return None
    jax.config.update("jax_platforms", platforms)
    return platforms
