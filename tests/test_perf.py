"""tpubench.platform.perf / tpubench.platform.chips: peaks per JAX device for the matmul unit that
runs, MFU that can never pass 100% unnoticed, and the CPU peak cache's keep-the-maximum rule.

Devices are stand-ins with the two attributes the peak code reads (`platform`, `device_kind`),
spelled as JAX reports them on the real hardware.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import subprocess
import sys
import warnings

import jax
import pytest

from tpubench.platform import chips, perf

REPO = pathlib.Path(__file__).resolve().parent.parent
T = 1e12


@dataclasses.dataclass(frozen=True)
class FakeDevice:
    platform: str
    device_kind: str


def devices(kind: str, n: int, platform: str = "tpu") -> list[FakeDevice]:
    return [FakeDevice(platform, kind)] * n


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Never read or write the user's ~/.cache/tpubench."""
    monkeypatch.setenv("TPUBENCH_CACHE_DIR", str(tmp_path / "cache"))


def test_tpu_v3_peak_is_per_core_and_chips_are_counted_once():
    """A v3-8 host shows 8 JAX devices (TensorCores) on 4 chips of 123 TFLOP/s each.
    Bites: devices_per_chip=1 for v3 (peak 984 TFLOP/s over 8 "chips", the old table)."""
    v3 = devices("TPU v3", 8)
    assert perf.peak_flops(v3, "bfloat16") == pytest.approx(4 * 123 * T)
    assert chips.chip_count(v3) == 4
    assert chips.CHIPS["v3"].per_device_hbm_bytes == 16 * 2**30
    # v4 and v5p are megacore: one device per chip.
    assert chips.chip_count(devices("TPU v4", 4)) == 4


def test_platform_name_counts_chips_not_devices():
    """Summaries and `submission_platform` name chips x kind. Bites: counting devices (a v3-8
    host's 8 TensorCores would read '8xTPU_v3') or not replacing spaces."""
    assert chips.platform_name(devices("TPU v3", 8)) == "4xTPU_v3"
    assert chips.platform_name(devices("NVIDIA H200", 1, "gpu")) == "1xNVIDIA_H200"
    assert chips.platform_name(devices("cpu", 2, "cpu")) == "2xcpu"


@pytest.mark.parametrize("kind", ["TPU v5", "TPU v5p"])
def test_tpu_v5p_float32_runs_in_bf16_passes(kind):
    """On TPU a float32 matmul is 1 bf16 MXU pass by default, 3 at "high", 6 at "highest".
    Bites: the old rule (float32 -> peak_fp32_flops, falling back to bf16) ignores precision."""
    v5p = devices(kind, 8)
    assert perf.peak_flops(v5p, "bfloat16") == pytest.approx(8 * 459 * T)
    assert perf.peak_flops(v5p, "float32", "default") == pytest.approx(8 * 459 * T)
    assert perf.peak_flops(v5p, "float32", "high") == pytest.approx(8 * 459 * T / 3)
    assert perf.peak_flops(v5p, "float32", "highest") == pytest.approx(8 * 459 * T / 6)
    assert chips.chip_count(v5p) == 8


def test_h200_float32_is_tf32_unless_highest():
    """XLA runs float32 matmuls on TF32 tensor cores on Ampere/Hopper unless the precision is
    "highest". Bites: dividing a float32 run by the plain FP32 peak (67 TFLOP/s)."""
    h200 = devices("NVIDIA H200", 1, "gpu")
    assert perf.peak_flops(h200, "bfloat16") == pytest.approx(989.5 * T)
    assert perf.peak_flops(h200, "float32", "default") == pytest.approx(494.5 * T)
    assert perf.peak_flops(h200, "float32", "tensorfloat32") == pytest.approx(494.5 * T)
    assert perf.peak_flops(h200, "float32", "highest") == pytest.approx(67 * T)
    assert perf.peak_flops(h200, "float32", "float32") == pytest.approx(67 * T)
    assert perf.peak_flops(h200, "float32", "BF16_BF16_F32_X3") == pytest.approx(989.5 * T / 3)
    assert perf.peak_flops(h200, "float32", "ANY_F8_ANY_F8_F32") == 0.0  # no dense FP8 entry
    with jax.default_matmul_precision("highest"):  # the process setting is read by default
        assert perf.peak_flops(h200, "float32") == pytest.approx(67 * T)
    assert perf.peak_flops(h200, "float32") == pytest.approx(494.5 * T)


def test_a_tf32_speed_gives_an_mfu_below_100_percent_on_h200():
    """300 TFLOP/s of float32 matmuls is possible on an H200 (TF32 tensor cores, 494.5 peak): the
    MFU must come out as 0.61, not the 4.5 the FP32 peak gave. Bites: TF32 rule removed."""
    h200 = devices("NVIDIA H200", 1, "gpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error", perf.MFUAbovePeakWarning)
        value = perf.mfu(300 * T, 1, 1.0, perf.peak_flops(h200, "float32", None))
    assert value == pytest.approx(300 / 494.5)


def test_mfu_above_100_percent_is_withheld_with_a_warning():
    """Bites: returning the ratio unchecked (the old mfu printed 448% for this case)."""
    with pytest.warns(perf.MFUAbovePeakWarning, match="above 100%"):
        value = perf.mfu(300 * T, 1, 1.0, 67 * T)
    assert math.isnan(value)
    assert perf.mfu(67 * T, 1, 1.0, 67 * T) == 1.0  # exactly at peak is possible, in theory
    assert perf.mfu(1.0, 1, 1.0, 0.0) == 0.0  # unknown peak: unknown, not infinite


def test_unknown_accelerators_have_no_peak():
    assert perf.peak_flops(devices("Tesla V100-SXM2-16GB", 1, "gpu"), "float32") == 0.0
    assert chips.chip_for_device_kind("TPU v5 lite") is chips.CHIPS["v5e"]
    assert chips.chip_for_device_kind("TPU v6 lite") is chips.CHIPS["v6e"]


def test_cpu_peak_is_the_measured_one(monkeypatch):
    """CPU: the measured matmul peak, shared by all (simulated) CPU devices of the process.
    Bites: multiplying the CPU peak by the device count."""
    monkeypatch.setattr(perf, "measure_cpu_peak_flops", lambda: 123e9)
    assert perf.peak_flops(devices("cpu", 8, "cpu"), "float32") == 123e9
    assert chips.chip_count(devices("cpu", 8, "cpu")) == 8


def test_cpu_peak_cache_keeps_the_maximum(monkeypatch, tmp_path):
    """A lower later measurement (a busy machine) does not lower the cached peak; a higher one
    raises it. Bites: caching the latest measurement instead of the maximum."""
    cache = tmp_path / "cache"
    measured = iter([100e9, 50e9, 200e9])
    monkeypatch.setattr(perf, "measure_cpu_peak_flops", lambda: next(measured))

    def cached() -> float:
        return json.loads((cache / "cpu_peak.json").read_text())[perf._cpu_key()]

    assert perf.cpu_peak_flops() == 100e9 and cached() == 100e9
    assert perf.cpu_peak_flops() == 100e9 and cached() == 100e9
    assert perf.cpu_peak_flops() == 200e9 and cached() == 200e9


# As if not installed: `import X` raises ImportError, importlib.util.find_spec("X") is None.
_BLOCK_OPTIONAL = """
import runpy, sys
for name in ("tensorflow_datasets", "tensorflow", "mlperf_loadgen", "libtpu", "sklearn",
             "mlxtend"):
    sys.modules[name] = None
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_gpu_check_tiny_runs_on_cpu_without_optional_modules(tmp_path):
    """benchmarks/gpu_check.py --tiny on CPU with tfds, TF, LoadGen, libtpu and sklearn made
    unimportable: the train path imports none of them, the ResNet mini falls back to synthetic
    data, and the JSON holds an MFU in (0, 1] per dtype. Bites: a top-level `import sklearn` in
    workloads/resnet/input_pipeline.py (tried: the run dies with "sklearn blocked")."""
    out = tmp_path / "gpu_check.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu", TPUBENCH_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", _BLOCK_OPTIONAL, "benchmarks/gpu_check.py", "--tiny",
         f"--out={out}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["ok"] is True
    assert [r["dtype"] for r in result["throughput"]] == ["bfloat16", "float32"]
    for row in result["throughput"]:
        assert row["images_per_s"] > 0 and row["init_compile_s"] > 0
        assert 0.0 < row["mfu"] <= 1.0
    assert result["bert"]["workload"] == "bert" and 0.0 < result["bert"]["mfu"] <= 1.0
    assert result["bert"]["examples_per_s"] > 0
    assert "mlperf_loadgen is not installed" in result["offline"]["skipped"]
    mini = result["mini"]
    assert mini["data_source"] == "synthetic" and "sklearn" in mini["note"]
    assert mini["steps"] > 0 and mini["time_to_target_s"] is None


def test_gpu_check_offline_serves_synthetic_images_under_loadgen():
    """With LoadGen installed, section (d) is a VALID Offline run of random images, labelled as
    no result. Bites: serving the config's own data (no `data.source=synthetic`) -> the smoke
    config's tfds data is absent (exit 2, no summary)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import gpu_check

    served = gpu_check.offline(tiny=True)
    assert served["exit_status"] == 0 and served["validity"] == "VALID"
    assert served["samples_per_s"] > 0
    assert served["not_mlperf_reasons"][0].startswith("synthetic samples")
