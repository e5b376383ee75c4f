"""`tpubench run --runs=N`: N seeds, one run directory each, one score
(tpubench/loops/multirun.py)."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
import runs

from tpubench import config as config_lib
from tpubench.loops import multirun
from tpubench.report.tree import load_tree

SMOKE_TO_TARGET = ("--config=smoke", "--config.eval.target_value=0.0")


def test_a_series_runs_each_seed_once_and_a_longer_series_resumes_it(tmp_path):
    """--runs=2 then --runs=3 with the same --workdir: run_0/run_1 get seeds 0 and 1, the second
    command keeps both untouched (their summaries byte for byte) and runs only run_2 with seed 2;
    each command writes its own series score (series.json, then series.1.json), labelled not an
    MLPerf result, counting every run that reached the target.
    Bites: seeding every run with config.run.seed (all seeds 0; tried), rerunning ended runs
    (UsageError: a finished run lives there), overwriting series.json."""
    workdir = tmp_path / "series"
    first = runs.tpubench("run", "resnet", *SMOKE_TO_TARGET, f"--workdir={workdir}", "--runs=2")
    assert first.returncode == 0, first.stderr[-3000:]
    kept = {i: (workdir / f"run_{i}" / "summary.json").read_bytes() for i in (0, 1)}
    second = runs.tpubench("run", "resnet", *SMOKE_TO_TARGET, f"--workdir={workdir}", "--runs=3")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "run 1/3 already ended" in second.stdout and "run 2/3 already ended" in second.stdout
    for i in (0, 1):
        assert (workdir / f"run_{i}" / "summary.json").read_bytes() == kept[i]
    seeds = [runs.summary(workdir / f"run_{i}")["seed"] for i in range(3)]
    assert seeds == [0, 1, 2]
    one = json.loads((workdir / "series.json").read_text())
    two = json.loads((workdir / "series.1.json").read_text())
    assert (one["runs_requested"], one["runs"], one["reached_target"]) == (2, 2, 2)
    assert (two["runs_requested"], two["runs"], two["reached_target"]) == (3, 3, 3)
    assert two["kind"].startswith("not an MLPerf result")
    assert "(not an MLPerf result): 3 of 3 runs reached the target" in second.stdout


def test_the_default_count_is_the_v07_count_for_mlperf_configs_and_one_for_minis():
    """Bites: a default of 1 for MLPerf configs, or the wrong table (10 for ResNet)."""
    counts = {w: multirun.default_runs(config_lib.load(w, "full"))
              for w in ("resnet", "ssd", "dlrm", "bert", "transformer", "gnmt")}
    assert counts == {"resnet": 5, "ssd": 5, "dlrm": 5, "bert": 10, "transformer": 10,
                      "gnmt": 10}
    assert multirun.default_runs(config_lib.load("resnet", "mini")) == 1


def test_default_directories_take_the_next_free_indices(tmp_path):
    """Without --workdir a series takes the next free run_<i>, skipping taken ones, the same
    in every process (nothing is created to compute them).
    Bites: calling default_workdir N times without claiming (N copies of one directory)."""
    cfg = config_lib.load("resnet", "mini")
    base = tmp_path / "mini" / "1xcpu" / "resnet" / "mini"
    for taken in (0, 2):
        (base / f"run_{taken}").mkdir(parents=True)
    dirs = multirun.run_dirs(cfg, 3, None, str(tmp_path), "1xcpu")
    assert dirs == [base / "run_1", base / "run_3", base / "run_4"]
    assert not any(d.exists() for d in dirs)


@pytest.mark.parametrize("runs_flag", ["--runs=0", "--runs=-2"])
def test_a_count_below_one_is_a_usage_error(runs_flag, tmp_path):
    proc = runs.tpubench("run", "resnet", "--config=smoke", f"--workdir={tmp_path / 'w'}",
                         runs_flag)
    assert proc.returncode == 2 and "pass a positive number of runs" in proc.stderr
    assert not (tmp_path / "w").exists()


def _mlperf_run_dir(path: pathlib.Path, log: pathlib.Path) -> None:
    path.mkdir(parents=True)
    shutil.copy(log, path / "mlperf_log.txt")
    (path / "summary.json").write_text(json.dumps(
        {"workload": "resnet", "config": "full", "is_mlperf": True, "status": "success",
         "platform": "tpu-v3-32"}))


def test_an_mlperf_series_is_scored_as_tpubench_report_scores_it(tmp_path, shared_data_dir):
    """Five of Google's published v0.7 ResNet logs placed as the runs of a series: the series'
    olympic mean and verdict equal `tpubench report`'s on the same directories, and dropping a
    run makes it incomplete.
    Bites: averaging all runs (no olympic drop), or scoring summary.json instead of the log."""
    logs = sorted((shared_data_dir / "mlperf_v07_results" / "Google" / "results"
                   / "tpu-v3-32-TF2.0" / "resnet").glob("result_*.txt"))[:5]
    dirs = [tmp_path / f"run_{i}" for i in range(5)]
    for d, log in zip(dirs, logs, strict=True):
        _mlperf_run_dir(d, log)
    cfg = config_lib.load("resnet", "full")
    scored = multirun.score(cfg, dirs)
    (reported,) = load_tree(tmp_path).results
    assert scored["olympic_mean_minutes"] == pytest.approx(reported.minutes, rel=1e-12)
    assert scored["valid"] is True and scored["verdict"] == reported.verdict()
    minutes = sorted(r.minutes for r in reported.runs)
    assert scored["olympic_mean_minutes"] == pytest.approx(sum(minutes[1:-1]) / 3)
    assert scored["olympic_mean_minutes"] != pytest.approx(sum(minutes) / 5)
    short = multirun.score(cfg, dirs[:4])
    assert short["valid"] is False
    assert "4 of 5 required runs ended" in multirun.summary_line(short)
