"""Bad input gets one clear paragraph saying how to fix it, exit status 2, before any compute,
and nothing is written."""

from __future__ import annotations

import runs


def _assert_usage_error(proc, *phrases, workdir=None):
    assert proc.returncode == 2, proc.stderr[-2000:]
    err = proc.stderr
    assert "tpubench: error:" in err
    assert "Traceback" not in err
    for phrase in phrases:
        assert phrase in err, err[-2000:]
    if workdir is not None:
        assert not workdir.exists(), "nothing may be written for bad input"


def test_unknown_workload_lists_the_known_ones(tmp_path):
    proc = runs.tpubench("run", "resnet50", "--config=mini", f"--workdir={tmp_path / 'w'}")
    _assert_usage_error(proc, "Unknown workload 'resnet50'", "resnet", "tpubench list",
                        workdir=tmp_path / "w")


def test_unknown_config_lists_the_workloads_configs(tmp_path):
    proc = runs.tpubench("run", "resnet", "--config=tiny", f"--workdir={tmp_path / 'w'}")
    _assert_usage_error(proc, "Unknown config 'tiny'", "full, full_sgd, mini, smoke",
                        workdir=tmp_path / "w")


def test_unknown_config_key_is_refused_not_added(tmp_path):
    proc = runs.tpubench("run", "resnet", "--config=mini", "--config.batch_size=64",
                         f"--workdir={tmp_path / 'w'}")
    _assert_usage_error(proc, "Unknown config key 'batch_size'", "global_batch_size",
                        workdir=tmp_path / "w")


def test_mistyped_value_is_refused(tmp_path):
    proc = runs.tpubench("run", "resnet", "--config=mini", "--config.global_batch_size=lots",
                         f"--workdir={tmp_path / 'w'}")
    _assert_usage_error(proc, "global_batch_size", workdir=tmp_path / "w")


def test_mesh_that_does_not_fit_the_devices(tmp_path):
    proc = runs.tpubench("run", "resnet", "--config=smoke", "--config.mesh.data=3",
                         f"--workdir={tmp_path / 'w'}",
                         XLA_FLAGS="--xla_force_host_platform_device_count=2")
    _assert_usage_error(proc, "has 3 devices but this host sees 2", "-1",
                        workdir=tmp_path / "w")


def test_batch_not_divisible_by_the_data_axis(tmp_path):
    proc = runs.tpubench("run", "resnet", "--config=smoke", "--config.global_batch_size=9",
                         f"--workdir={tmp_path / 'w'}",
                         XLA_FLAGS="--xla_force_host_platform_device_count=2")
    _assert_usage_error(proc, "global_batch_size=9 does not divide", "multiple of 2",
                        workdir=tmp_path / "w")


def test_missing_tfds_dataset_says_how_to_prepare_it(tmp_path):
    proc = runs.tpubench("run", "resnet", "--config=full", f"--workdir={tmp_path / 'w'}",
                         f"--config.data_dir={tmp_path / 'no_data'}")
    _assert_usage_error(proc, "imagenet2012", "tfds build imagenet2012", "data_source=synthetic",
                        workdir=tmp_path / "w")


def test_the_absl_entry_point_gives_the_same_errors(tmp_path):
    proc = runs.run_main("resnet", "full", tmp_path / "w", f"--config.data_dir={tmp_path / 'x'}")
    _assert_usage_error(proc, "tfds build imagenet2012", workdir=tmp_path / "w")
