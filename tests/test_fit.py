"""`tpubench fit`: AOT-compile a config for a target topology; memory, FLOPs, roofline, verdict.

The cpu:1 target always runs (this process has one CPU device), so the code path is tested in
CI without libtpu. TPU targets need libtpu (the optional `tpu` extra); without it those tests
are skipped, and say so.
"""

import importlib.util
import json
import os

import pytest

from tpubench import config as config_lib
from tpubench import fit
from tpubench.errors import UsageError

HAS_LIBTPU = importlib.util.find_spec("libtpu") is not None
# Compile-only topologies touch no chip, so another libtpu user (a parallel test run, a `fit` in
# another shell) need not hold us off with libtpu's lockfile.
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
needs_libtpu = pytest.mark.skipif(
    not HAS_LIBTPU, reason="libtpu is not installed (pip install 'tpubench[tpu]'): TPU "
                           "compile-only targets cannot be built")


SMALL = {"model.stage_sizes": (1, 1)}  # the smoke ResNet cut to 2 stages: compiles faster


def smoke(**overrides):
    return config_lib.load("resnet", "smoke", {**SMALL, **overrides})


@pytest.fixture(scope="module")
def cpu_report():
    return fit.fit(smoke(), "cpu:1")


def test_cpu_target_reports_memory_flops_and_no_hbm_verdict(cpu_report):
    report = cpu_report
    assert report.topology == "cpu:1" and report.devices == 1
    assert report.mesh == {"data": 1, "fsdp": 1, "tensor": 1}
    for mem in (report.train, report.eval):
        assert mem.arguments > 0 and mem.temps >= 0
        assert mem.total == mem.arguments + mem.outputs - mem.aliased + mem.temps + mem.code
    # The train state is donated: its buffers are reused for the new state.
    assert report.train.aliased > 0
    assert report.flops_per_step > 1e6 and report.bytes_per_step > 0
    assert report.fits is None and "no HBM figure" in report.reason
    assert report.roofline_step_s == pytest.approx(report.flops_per_step / report.peak_flops)


def test_block_flops_are_one_steps_flops():
    """XLA counts a scanned loop body once: 2- and 4-step blocks report the same FLOPs, one
    step's. (K=1 is not a loop at all, and XLA fuses straight-line code differently.)"""
    two = fit.fit(smoke(steps_per_dispatch=2), "cpu:1").flops_per_step
    four = fit.fit(smoke(steps_per_dispatch=4), "cpu:1").flops_per_step
    assert four == pytest.approx(two, rel=0.02)


def test_cli_prints_json_and_exits_zero(capsys):
    code = fit.main(["resnet", "--config=smoke", "--topology=cpu:1", "--json",
                     "--config.global_batch_size=4", "--config.model.stage_sizes=(1, 1)"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["global_batch_size"] == 4 and out["train"]["total"] > 0
    assert out["fits"] is None


def test_text_report(cpu_report):
    text = fit.format_report(cpu_report)
    assert text.startswith("resnet --config=smoke on cpu:1: 1 devices")
    assert "train block per device: arguments" in text
    assert "MEMORY NOT CHECKED" in text


def test_device_count_mismatch_is_a_usage_error():
    with pytest.raises(UsageError, match="needs 2 CPU devices"):
        fit.fit(smoke(), "cpu:2")


def test_unknown_topology_and_stray_arguments_are_usage_errors():
    with pytest.raises(UsageError, match="Unknown topology"):
        fit.fit(smoke(), "v9:2x2")
    with pytest.raises(UsageError, match="Unrecognized arguments: --steps=3"):
        fit.main(["resnet", "--config=smoke", "--topology=cpu:1", "--steps=3"])


@needs_libtpu
def test_v5p_slice_fits_the_smoke_config_over_eight_chips():
    report = fit.fit(smoke(global_batch_size=64, eval_batch_size=64), "v5p:2x2x2")
    assert report.devices == 8 and report.mesh["data"] == 8
    assert report.fits is True and report.hbm_bytes == 95 * 2**30
    assert 0 < report.train.total < report.hbm_bytes
    assert report.peak_flops == 459e12 and report.hbm_bytes_per_s == 2765e9
    assert report.roofline_step_s == pytest.approx(max(
        report.flops_per_step / 459e12, report.bytes_per_step / 2765e9))


@needs_libtpu
def test_batch_that_cannot_fit_one_v5e_chip_exits_one(capsys):
    code = fit.main(["resnet", "--config=smoke", "--topology=v5e:1x1",
                     "--config.global_batch_size=1048576", "--config.eval_batch_size=8"])
    out = capsys.readouterr().out
    assert code == 1
    assert "DOES NOT FIT" in out
