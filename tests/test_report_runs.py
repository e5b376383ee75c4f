"""Spec of what `tpubench report` says about each run workdir (issue 33, item 6): NaN-safe
aggregates, the true reason a run is not an MLPerf result, per-run examples/s, MFU and
compliance columns, and loss/throughput curves from metrics.jsonl beside quality vs time.

The workdirs are written by the code that writes them in a run: `RunLogger` (mlperf_logging) for
mlperf_log.txt, `JsonlWriter` for metrics.jsonl, and summary.json with the keys
`tpubench.loops.lifecycle.build_summary` and the supervised loop write. The MLPerf workdir
carries Google's real JAX ResNet-50 v0.7 log, so its compliance verdict is the real checker's.
"""

import contextlib
import csv
import io
import json
import math
import pathlib
import shutil
import time

import pytest

from tpubench.loops.writers import JsonlWriter
from tpubench.mlperf.mllog import RunLogger, constants
from tpubench.report import cli
from tpubench.report.compliance import check_in_process
from tpubench.report.scoring import mini_summary
from tpubench.report.tree import load_tree

JAX_RESNET = "mlperf_v07_results/Google/results/tpu-v3-8192-JAX/resnet"
T0 = float(int(time.time()))  # run_start (unix s); JsonlWriter stamps records with time.time()
NAN_ERROR = ("The training loss became NaN/Inf in the block ending at step 20 (last loss nan). "
             "Lower the learning rate or check the input data; the run is stopped and marked "
             "aborted.")
OPEN_REASON = ("data.train_samples=1000 changes the benchmark: closed division keeps the "
               "reference's data, model, quality target and training method")


def _summary(**overrides) -> dict:
    """summary.json as a mini run writes it (lifecycle.build_summary + the supervised loop)."""
    s = {"workload": "resnet", "config": "mini", "dataset": "imagenette", "is_mlperf": False,
         "division": "open", "open_reasons": [], "status": "success", "error": None,
         "target": 0.75, "target_metric": "top1_accuracy", "final_quality": 0.7886,
         "time_to_target_s": 60.0, "run_time_s": 60.0, "run_start_unix": T0, "steps": 30,
         "attempts": 1, "resumed": False, "platform": "1xcpu", "global_batch_size": 8,
         "quality_history": [{"elapsed_s": 30.0, "samples": 80, "quality": 0.5},
                             {"elapsed_s": 60.0, "samples": 240, "quality": 0.7886}],
         "train_examples_per_s": 1234.5, "mfu": 0.4321, "metrics": None}
    s.update(overrides)
    return s


def _log(path: pathlib.Path, summary: dict, platform: str) -> None:
    """mlperf_log.txt as the lifecycle writes it: header, run_start, evals, run_stop."""
    log = RunLogger(path)
    log.event(constants.SUBMISSION_PLATFORM, platform)
    log.event(constants.SUBMISSION_DIVISION, summary["division"])
    log.event(constants.SUBMISSION_BENCHMARK, summary["workload"])
    t0 = round(T0 * 1000)
    log.start(constants.RUN_START, time_ms=t0)
    for h in summary["quality_history"]:
        log.event(constants.EVAL_ACCURACY, h["quality"], metadata={"epoch_num": 1},
                  time_ms=t0 + round(h["elapsed_s"] * 1000))
    log.end(constants.RUN_STOP, metadata={"status": summary["status"]},
            time_ms=t0 + round(summary["run_time_s"] * 1000))
    log.close()


def _metrics(path: pathlib.Path, losses: list[float], examples_per_s: float) -> None:
    """metrics.jsonl: one record per dispatch (examples/s on the block's last), one eval."""
    w = JsonlWriter(path)
    for i, loss in enumerate(losses):
        scalars = {"train/loss": loss, "train/learning_rate": 0.1}
        if i == len(losses) - 1:
            scalars["train/examples_per_s"] = examples_per_s
        w.write_scalars(10 * (i + 1), scalars)
    w.write_scalars(10 * len(losses), {"eval/top1_accuracy": 0.5, "eval/time_s": 1.0})
    w.close()


def _workdir(path: pathlib.Path, summary: dict, platform: str = "",
             losses: list[float] | None = None) -> pathlib.Path:
    path.mkdir(parents=True)
    if losses is not None:
        _metrics(path / "metrics.jsonl", losses, summary["train_examples_per_s"])
        summary["metrics"] = {"jsonl": str(path / "metrics.jsonl"),
                              "tensorboard": str(path / "tensorboard")}
    if platform:
        _log(path / "mlperf_log.txt", summary, platform)
    (path / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    return path


@pytest.fixture()
def runs_dir(shared_data_dir, tmp_path) -> pathlib.Path:
    """A NaN mini run listed before a 0.7886 one, an open-division run, an MLPerf run."""
    root = tmp_path / "runs"
    mini = "1xcpu-mini-imagenette"
    _workdir(root / "mini/run_0", _summary(
        status="aborted", error=NAN_ERROR, final_quality=float("nan"), time_to_target_s=None,
        mfu=None, train_examples_per_s=987.0,
        quality_history=[{"elapsed_s": 30.0, "samples": 80, "quality": float("nan")}]),
        mini, losses=[2.5, 2.25, float("nan")])
    _workdir(root / "mini/run_1", _summary(), mini, losses=[2.5, 1.75, 1.5])
    _workdir(root / "open/run_0", _summary(
        config="full", dataset="imagenet", open_reasons=[OPEN_REASON], status="aborted",
        final_quality=0.6, time_to_target_s=None, target=0.759, mfu=None,
        quality_history=[{"elapsed_s": 30.0, "samples": 80, "quality": 0.6}]), "1xcpu")
    mlperf = _workdir(root / "mlperf/run_0", _summary(
        config="full", dataset="imagenet", is_mlperf=True, division="closed",
        platform="4096xTPU_v3", target=0.759, train_examples_per_s=2.5e6, mfu=0.55))
    shutil.copy(shared_data_dir / JAX_RESNET / "result_0.txt", mlperf / "mlperf_log.txt")
    return root


def _cli(args: list[str]) -> str:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert cli.main(args) == 0
    return stdout.getvalue()


def _table(text: str, title: str) -> dict[str, list[str]]:
    """The Markdown table under `## title`, as first cell -> cells."""
    section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][2:]
    cells = [[c.strip() for c in row.strip("|").split(" | ")] for row in rows]
    return {c[0]: c for c in cells}


def test_a_nan_run_never_hides_another_runs_best_final_quality(runs_dir, tmp_path):
    """Bites: max() over [nan, 0.7886] (the NaN run first) is nan; and NaN in report.json."""
    tree = load_tree(runs_dir)
    minis = [r for r in tree.mini_runs if r.config == "mini"]
    assert [math.isnan(r.final_quality) for r in minis] == [True, False]  # NaN run first
    s = mini_summary(minis)
    assert s["best_final_quality"] == 0.7886
    assert (s["nan_runs"], s["aborted_runs"]) == (1, 1)

    out = tmp_path / "out"
    stdout = _cli([str(runs_dir), f"--out={out}", "--no-plots"])
    row = _table(stdout, "Mini and smoke runs (not MLPerf results)")["resnet [mini]"]
    assert row[3:8] == ["2", "1/2", "1 (1 NaN)", "60.0", "0.7886 (1 NaN left out)"]

    def no_nan(token):
        raise AssertionError(f"report.json holds {token}: not JSON")

    report = json.loads((out / "report.json").read_text(), parse_constant=no_nan)
    finals = {r["path"].split("runs/")[1]: r["final_quality"]
              for r in report["mini_runs_not_mlperf"]}
    assert finals["mini/run_0"] is None and finals["mini/run_1"] == 0.7886


def test_each_runs_why_not_mlperf_gives_its_real_reason(runs_dir, tmp_path):
    """A mini is not MLPerf because it is a mini; an open run because of its open_reasons; a NaN
    run also because of its error; an MLPerf run that counts has none. Bites: every non-MLPerf
    row saying 'open division in its log' (a mini's log says open too)."""
    stdout = _cli([str(runs_dir), f"--out={tmp_path / 'out'}", "--no-plots"])
    groups = _table(stdout, "Mini and smoke runs (not MLPerf results)")
    mini_why = ("mini: config 'mini' is not an MLPerf config (is_mlperf false; data set "
                "imagenette; log platform 1xcpu-mini-imagenette)")
    assert groups["resnet [mini]"][2] == mini_why
    assert groups["resnet [full]"][2] == f"open division: {OPEN_REASON}"

    runs = _table(stdout, "Every run workdir")
    assert runs["mini/run_1"][-1] == mini_why  # a mini that reached its own target
    assert runs["mini/run_0"][-1] == (
        f"{mini_why}; aborted: The training loss became NaN/Inf in the block ending at step 20 "
        "(last loss nan)")
    assert runs["open/run_0"][-1].startswith(
        f"open division: {OPEN_REASON}; aborted: budget spent before its target "
        "(top1_accuracy >= 0.759), final 0.6")
    assert runs["open/run_0"][-1].endswith("the official checker rejects its log (see compliance)")
    assert "open division" not in groups["resnet [mini]"][2] + runs["mini/run_0"][-1]


def test_per_run_columns_hold_the_summary_values_and_the_checkers_verdict(runs_dir, tmp_path):
    """examples/s and MFU are the summary's (MFU null: n/a); compliance is the official
    checker's verdict on the run's own log (VALID for Google's real log); --no-compliance
    says 'not checked'."""
    out = tmp_path / "out"
    runs = _table(_cli([str(runs_dir), f"--out={out}", "--no-plots"]), "Every run workdir")
    head = ["run", "workload", "platform", "status", "final quality", "target", "run time (s)",
            "examples/s", "MFU"]
    assert dict(zip(head, runs["mini/run_1"], strict=False)) == {
        "run": "mini/run_1", "workload": "resnet", "platform": "1xcpu", "status": "success",
        "final quality": "0.7886", "target": "top1_accuracy >= 0.75", "run time (s)": "60.0",
        "examples/s": "1234.5", "MFU": "43.2%"}
    assert runs["mini/run_0"][3:9] == ["aborted", "nan", "top1_accuracy >= 0.75", "60.0",
                                      "987.0", "n/a"]
    assert runs["open/run_0"][3] == "aborted"
    assert runs["mlperf/run_0"][2:4] == ["4096xTPU_v3", "success"]
    assert runs["mlperf/run_0"][7:] == ["2500000.0", "55%", "VALID", "- (counts)"]

    first_failed = check_in_process(runs_dir / "mini/run_1/mlperf_log.txt").failed_checks()[0]
    assert runs["mini/run_1"][9] == "INVALID: " + first_failed.removeprefix("ERROR:").strip()
    facts = {r["path"].split("runs/")[1]: r for r in
             json.loads((out / "report.json").read_text())["mini_runs_not_mlperf"]}
    assert (facts["mini/run_1"]["examples_per_s"], facts["mini/run_1"]["mfu"]) == (1234.5, 0.4321)
    assert facts["mini/run_0"]["mfu"] is None and facts["mini/run_0"]["error"] == NAN_ERROR

    unchecked = _table(_cli([str(runs_dir), f"--out={tmp_path / 'o2'}", "--no-plots",
                             "--no-compliance"]), "Every run workdir")
    assert {row[9] for row in unchecked.values()} == {"not checked"}


def test_loss_and_throughput_curves_hold_every_metrics_jsonl_point(runs_dir, tmp_path):
    """curves_resnet.csv holds each train record of each run's metrics.jsonl (step, minutes
    since run_start, loss, examples/s), eval records left out; the PNG and the HTML page show
    them."""
    out = tmp_path / "out"
    stdout = _cli([str(runs_dir), f"--out={out}", "--html"])
    assert f"Wrote {out / 'curves_resnet.png'}" in stdout
    with open(out / "curves_resnet.csv") as f:
        rows = list(csv.DictReader(f))
    for name in ("mini/run_0", "mini/run_1"):
        records = [json.loads(line) for line in
                   (runs_dir / name / "metrics.jsonl").read_text().splitlines()]
        expected = [(r["step"], (r["wall_time"] - T0) / 60.0, r["train/loss"],
                     r.get("train/examples_per_s")) for r in records if "train/loss" in r]
        got = [(int(r["step"]), float(r["minutes"]), float(r["loss"]),
                float(r["examples_per_s"]) if r["examples_per_s"] else None)
               for r in rows if r["run"] == name]
        assert len(got) == len(expected) == 3
        for g, e in zip(got, expected, strict=True):
            assert g[:2] == e[:2] and g[3] == e[3]
            assert g[2] == e[2] or (math.isnan(g[2]) and math.isnan(e[2]))
    assert {r["run"] for r in rows} == {"mini/run_0", "mini/run_1"}  # no metrics, no points
    assert [float(r["loss"]) for r in rows if r["run"] == "mini/run_1"] == [2.5, 1.75, 1.5]
    assert (out / "curves_resnet.png").stat().st_size > 10_000
    assert 'alt="curves_resnet"' in (out / "report.html").read_text()
