"""No TPU here: JAX stays off libtpu with no environment variable (issue 9.18,
tpubench.platform.host)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import runs

from tpubench.platform import host


def _root(tmp_path, *files: tuple[str, str]):
    for rel, text in files:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


PCI = "sys/bus/pci/devices/0000:00:04.0/"


@pytest.mark.parametrize(("files", "expected"), [
    ((), "cpu"),
    (((PCI + "vendor", "0x1ae0\n"), (PCI + "device", "0x0062\n")), None),  # a TPU v5p chip
    (((PCI + "vendor", "0x1ae0\n"), (PCI + "device", "0x0042\n")), "cpu"),  # Google gVNIC
    (((PCI + "vendor", "0x8086\n"), (PCI + "device", "0x0062\n")), "cpu"),  # not Google
    ((("dev/accel0", ""),), None),
    ((("dev/vfio/0", ""),), None),
    ((("dev/vfio/vfio", ""),), "cpu"),  # the vfio control file alone is no device
    ((("dev/nvidia0", ""),), None),
])
def test_only_a_host_without_tpu_or_gpu_is_kept_to_the_cpu(tmp_path, files, expected):
    """Bites: tpu_visible() reading only PCI (a TPU behind /dev/accel* or /dev/vfio would be
    hidden from JAX), or counting any Google PCI device (a GCE VM's NIC) as a TPU."""
    assert host.platforms_for_host({}, _root(tmp_path, *files)) == expected


@pytest.mark.parametrize("environ", [{"JAX_PLATFORMS": ""}, {"JAX_PLATFORMS": "tpu"},
                                     {"JAX_FORCE_TPU_INIT": "1"}])
def test_the_users_choice_wins(tmp_path, environ):
    """Bites: platforms_for_host ignoring a JAX_PLATFORMS the user set (even to "")."""
    assert host.platforms_for_host(environ, tmp_path) is None


def _env_without_platforms() -> dict[str, str]:
    env = runs.env()
    env.pop("JAX_PLATFORMS")
    return env


LIBTPU_NOISE = ("libtpu", "TPU_", "InitGoogle", "E0000", "SIGTERM received", "FailureSignalHandler")


def _noise(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if any(n in line for n in LIBTPU_NOISE)]


@pytest.fixture
def cpu_host_with_libtpu(libtpu):
    if host.tpu_visible() or host.gpu_visible():
        pytest.skip("this host has an accelerator: JAX's own choice is kept")


def test_a_run_without_jax_platforms_is_quiet_and_works(tmp_path, cpu_host_with_libtpu):
    """`tpubench run` with JAX_PLATFORMS unset and libtpu installed: no libtpu line on stderr and
    the run completes on the CPU. The control (plain `import jax`) shows the noise this removes.
    Bites: tpubench/__init__.py without host.select_platforms()."""
    control = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"],
                             env=_env_without_platforms(), capture_output=True, text=True,
                             timeout=300, check=False)
    if not _noise(control.stderr):  # seen on CI's machine: its libtpu probe says nothing
        pytest.skip("plain `import jax` prints no libtpu noise on this host: nothing to remove")

    workdir = tmp_path / "w"
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench.cli", "run", "resnet", "--config=smoke",
         f"--workdir={workdir}", "--config.eval.target_value=0.0"],
        cwd=runs.REPO, env=_env_without_platforms(), capture_output=True, text=True,
        timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _noise(proc.stderr) == [], proc.stderr
    assert runs.summary(workdir)["status"] == "success"
    assert runs.summary(workdir)["platform"] == "1xcpu"


def test_sigterm_during_init_prints_no_libtpu_crash_trace(tmp_path, cpu_host_with_libtpu):
    """SIGTERM once JAX is up (the log's init_start follows jax.devices()): libtpu's failure
    signal handler is not installed, so no crash trace (how the process exits is the run's own
    business). Bites: tpubench/__init__.py without host.select_platforms()."""
    workdir = tmp_path / "w"
    proc = subprocess.Popen(
        [sys.executable, "-m", "workloads.resnet.main", "--config=mini", f"--workdir={workdir}"],
        cwd=runs.REPO, env=_env_without_platforms(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    log = workdir / "mlperf_log.txt"
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if log.exists() and "init_start" in log.read_text():
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be signalled"
    os.kill(proc.pid, signal.SIGTERM)
    _, stderr = proc.communicate(timeout=300)
    assert _noise(stderr) == [], stderr
