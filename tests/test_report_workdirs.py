"""Spec of `tpubench report` on a directory of our own run workdirs (summary.json +
mlperf_log.txt), of mini runs reported apart, and of the comparison against published results.

The MLPerf-config workdirs here carry real logs (Google's JAX ResNet-50 v0.7 runs) so that their
score can be checked against the official summarizer on the original folder.
"""

import contextlib
import io
import json
import pathlib
import shutil

import pytest
from mlperf_logging.result_summarizer import result_summarizer as official

from tpubench.report import cli
from tpubench.report.tree import load_tree

JAX_RESNET = "mlperf_v07_results/Google/results/tpu-v3-8192-JAX/resnet"


def _summary(**overrides) -> dict:
    summary = {
        "workload": "resnet", "config": "full", "status": "success", "target": 0.759,
        "target_metric": "accuracy", "final_quality": 0.76, "time_to_target_s": 30.0,
        "is_mlperf": True, "platform": "4096xTPU_v3",
        "quality_history": [{"elapsed_s": 10.0, "samples": 100, "quality": 0.5},
                            {"elapsed_s": 30.0, "samples": 300, "quality": 0.76}],
    }
    summary.update(overrides)
    return summary


def _workdir(path: pathlib.Path, summary: dict, log: pathlib.Path | None = None) -> None:
    path.mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps(summary))
    if log is not None:
        shutil.copy(log, path / "mlperf_log.txt")


@pytest.fixture()
def runs_dir(shared_data_dir, tmp_path) -> pathlib.Path:
    root = tmp_path / "runs"
    for i in range(5):  # MLPerf-config runs whose logs are Google's real JAX ResNet-50 logs
        _workdir(root / f"mlperf/run_{i}", _summary(),
                 shared_data_dir / JAX_RESNET / f"result_{i}.txt")
    _workdir(root / "mini/run_0", _summary(config="mini", is_mlperf=False, platform="1xcpu",
                                           target=0.9, final_quality=0.93))
    _workdir(root / "mini/run_1", _summary(config="mini", is_mlperf=False, platform="1xcpu",
                                           target=0.9, status="aborted", final_quality=0.6,
                                           time_to_target_s=None))
    return root


def _run_cli(args: list[str]) -> str:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert cli.main(args) == 0
    return stdout.getvalue()


def test_mlperf_workdirs_score_as_the_official_summarizer_on_the_same_logs(
    runs_dir, shared_data_dir
):
    tree = load_tree(runs_dir)
    (res,) = tree.results
    assert (res.system, res.benchmark, res.chips, len(res.runs)) == ("4096xTPU_v3", "resnet",
                                                                    4096, 5)
    with contextlib.redirect_stdout(io.StringIO()):
        expected, _, _ = official._compute_strong_score_standalone(
            "resnet", "x", False, str(shared_data_dir / JAX_RESNET), "training", "0.7.0")
    assert res.minutes == expected


def test_mini_runs_are_reported_apart_and_never_as_mlperf_results(runs_dir, tmp_path):
    """Mini rows carry a qualified name and the reason they are not MLPerf.

    Bites: a mini row named plain `resnet` (the MLPerf benchmark name, no qualifier).
    """
    tree = load_tree(runs_dir)
    assert sorted(r.status for r in tree.mini_runs) == ["aborted", "success"]
    assert all(r.is_mlperf for res in tree.results for r in res.runs)

    out = tmp_path / "out"
    stdout = _run_cli([str(runs_dir), f"--out={out}"])
    mlperf_part, mini_part = stdout.split("## Mini and smoke runs (not MLPerf results)")
    assert "1xcpu" not in mlperf_part
    assert ("| resnet [mini] | 1xcpu | mini: config 'mini' is not an MLPerf config (is_mlperf "
            "false) | 2 | 1/2 | 1 (0 NaN) |") in mini_part
    report = json.loads((out / "report.json").read_text())
    assert [r["system"] for r in report["results"]] == ["4096xTPU_v3"]
    assert len(report["mini_runs_not_mlperf"]) == 2
    assert (out / "quality_mini.png").stat().st_size > 5_000


def test_a_tree_of_only_mini_runs_gets_no_mlperf_table(runs_dir, tmp_path):
    stdout = _run_cli([str(runs_dir / "mini"), f"--out={tmp_path / 'out'}", "--no-plots"])
    assert "## resnet" not in stdout
    assert "Mini and smoke runs (not MLPerf results)" in stdout


def test_own_results_sit_beside_published_ones_normalised_per_chip(
    runs_dir, shared_data_dir, tmp_path
):
    google = shared_data_dir / "mlperf_v07_results" / "Google"
    out = tmp_path / "out"
    stdout = _run_cli([str(runs_dir), f"--compare={google}", "--per-chip", "--no-compliance",
                       f"--out={out}"])
    assert "## Compared with published results (Google), by chip-minutes" in stdout
    rows = json.loads((out / "report.json").read_text())["comparison"]["resnet"]
    mine = next(r for r in rows if r["mine"])
    google_jax = next(r for r in rows if r["system"] == "tpu-v3-8192-JAX")
    # Same logs, same chip count: same chip-minutes, same ratio to the best published result.
    assert mine["chip_minutes"] == google_jax["chip_minutes"]
    assert mine["ratio_to_best_published"] == google_jax["ratio_to_best_published"]
    best = min(r["chip_minutes"] for r in rows if not r["mine"] and r["chip_minutes"])
    assert mine["ratio_to_best_published"] == pytest.approx(mine["chip_minutes"] / best)
    assert min(r["ratio_to_best_published"] for r in rows) == pytest.approx(1.0)
    assert (out / "time_to_target.png").stat().st_size > 10_000
