"""Spec of how `tpubench report` scores preempted and resumed runs, and of the target and
division an MLPerf workdir is reported under (issue 9, items 1 and 8).

A resumed tpubench run keeps ONE mlperf_log.txt: attempt 1's lines, `tpubench_preempted`, then per
resume `tpubench_resume` (value = attempt number), more blocks, one `run_stop`. The logs here are
Google's real JAX ResNet-50 v0.7 logs with such preemptions spliced in (later lines shifted by
the outage), so their score can be compared with the official summarizer on the same files.
"""

import contextlib
import io
import json
import pathlib
import shutil

import pytest
from mlperf_logging.result_summarizer import result_summarizer as official

from tpubench.report import cli
from tpubench.report.compliance import check_runs
from tpubench.report.logs import read_mllog, run_from_log
from tpubench.report.tree import load_tree, rescore

JAX_RESNET = "mlperf_v07_results/Google/results/tpu-v3-8192-JAX/resnet"
PLATFORM = "4096xTPU_v3"


def _line(record: dict) -> str:
    return ":::MLLOG " + json.dumps(record)


def _event(key: str, time_ms: float, value, metadata: dict) -> dict:
    return {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key,
            "value": value, "metadata": metadata}


def splice_preemptions(src: pathlib.Path, dst: pathlib.Path, outages_min: list[float],
                       unfinished: bool = False) -> float:
    """Write `src` with a preemption + resume after block_stop 2, 4, ... (one per outage), every
    later line shifted by the outage; with `unfinished`, stop after the last preemption (no
    resume, no run_stop). Returns the run time in minutes of the written log."""
    records = read_mllog(src)
    out, shift, stops, attempt = [], 0.0, 0, 1
    for record in records:
        record = dict(record, time_ms=record["time_ms"] + shift)
        out.append(record)
        if record["key"] != "block_stop":
            continue
        stops += 1
        if stops % 2 or stops // 2 > len(outages_min):
            continue
        t, step = record["time_ms"], 100 * stops
        out.append(_event("tpubench_preempted", t + 500, step, {"attempt": attempt}))
        if unfinished and stops // 2 == len(outages_min):
            break
        shift += outages_min[stops // 2 - 1] * 60_000
        attempt += 1
        out.append(_event("tpubench_resume", t + shift, attempt, {"step": step}))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(_line(r) for r in out) + "\n")
    start = next(r for r in out if r["key"] == "run_start")["time_ms"]
    stop = next((r for r in out if r["key"] == "run_stop"), None)
    return None if stop is None else (stop["time_ms"] - start) / 60 / 1000


def _summary(**overrides) -> dict:
    summary = {"workload": "resnet", "config": "full", "status": "success", "is_mlperf": True,
               "platform": PLATFORM, "attempts": 1, "resumed": False, "target": 0.759,
               "final_quality": 0.76, "time_to_target_s": 30.0}
    summary.update(overrides)
    return summary


def _workdir(path: pathlib.Path, summary: dict | None) -> pathlib.Path:
    path.mkdir(parents=True, exist_ok=True)
    if summary is not None:
        (path / "summary.json").write_text(json.dumps(summary))
    return path


def official_score(folder: pathlib.Path) -> float | None:
    with contextlib.redirect_stdout(io.StringIO()):
        score, _, _ = official._compute_strong_score_standalone(
            "resnet", folder.parent.name, False, str(folder), "training", "0.7.0")
    return score


OUTAGES = {1: [10.0], 3: [4.0, 2.5]}  # run 1: one outage (2 attempts); run 3: two (3 attempts)


@pytest.fixture()
def resumed_runs(shared_data_dir, tmp_path):
    """Five MLPerf workdirs (runs 1 and 3 resumed), and the same five logs as a results tree."""
    runs, tree = tmp_path / "runs", tmp_path / "tree" / "Org" / "results" / "sys" / "resnet"
    minutes = {}
    for i in range(5):
        src = shared_data_dir / JAX_RESNET / f"result_{i}.txt"
        work = _workdir(runs / f"run_{i}", _summary(
            attempts=len(OUTAGES.get(i, [])) + 1, resumed=i in OUTAGES,
            time_to_target_s=1.0))  # a summary figure the report must never use
        minutes[i] = splice_preemptions(src, work / "mlperf_log.txt", OUTAGES.get(i, []))
        tree.mkdir(parents=True, exist_ok=True)
        shutil.copy(work / "mlperf_log.txt", tree / f"result_{i}.txt")
    return runs, tree, minutes


def _cli(args: list[str]) -> str:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert cli.main(args) == 0
    return stdout.getvalue()


def test_resumed_runs_are_scored_over_every_attempt_as_the_official_summarizer(
    resumed_runs, shared_data_dir
):
    """run_stop - run_start of the one log, outage included; same number as the summarizer.

    Bites: scoring a resumed run from summary.json's time_to_target_s, or from the last
    attempt only (the time after the last tpubench_resume).
    """
    runs_dir, tree_dir, minutes = resumed_runs
    original = run_from_log(shared_data_dir / JAX_RESNET / "result_1.txt", "x").minutes
    assert minutes[1] == pytest.approx(original + 10.0)  # the outage is on the clock
    tree = load_tree(runs_dir)
    check_runs(tree.all_runs())
    rescore(tree)
    (res,) = tree.results
    assert all(r.compliance.valid for r in res.runs)  # the official checker accepts the log
    assert {pathlib.Path(r.path).name: r.minutes for r in res.runs} == {
        f"run_{i}": m for i, m in minutes.items()}
    assert res.minutes == official_score(tree_dir)
    assert res.verdict() == "valid"
    assert {pathlib.Path(r.path).name: r.attempts for r in res.runs} == {
        "run_0": 1, "run_1": 2, "run_2": 1, "run_3": 3, "run_4": 1}


def test_report_shows_resumed_runs_and_their_attempts(resumed_runs, tmp_path):
    """Bites: attempts left at 1 (resume lines not counted), or not shown in the report."""
    runs_dir, _, _ = resumed_runs
    out = tmp_path / "out"
    stdout = _cli([str(runs_dir), f"--out={out}", "--no-plots"])
    assert "resumed runs" in stdout and "run_1: 2 attempts, run_3: 3 attempts" in stdout
    (result,) = json.loads((out / "report.json").read_text())["results"]
    assert result["resumed_runs"] == 2
    assert {pathlib.Path(r["path"]).name: (r["attempts"], r["resumed"]) for r in result["runs"]}[
        "run_3"] == (3, True)


def test_an_unfinished_run_is_never_scored_and_is_listed_with_the_reason(
    shared_data_dir, tmp_path
):
    """A log that ends preempted (no run_stop): not scored, with or without summary.json.

    Bites: falling back to summary.json's time_to_target_s when the log has no run_stop.
    """
    src = shared_data_dir / JAX_RESNET / "result_0.txt"
    with_summary = _workdir(tmp_path / "runs/a", _summary(status="success"))
    splice_preemptions(src, with_summary / "mlperf_log.txt", [5.0], unfinished=True)
    without = _workdir(tmp_path / "runs/b", None)
    splice_preemptions(src, without / "mlperf_log.txt", [5.0, 1.0], unfinished=True)
    tree = load_tree(tmp_path / "runs")
    assert tree.results == [] and tree.mini_runs == []
    reasons = {pathlib.Path(n.path).name: n.reason for n in tree.not_scored}
    assert reasons["a"].startswith("unfinished: preempted at step 200 in attempt 1")
    assert reasons["b"].startswith("unfinished: preempted at step 400 in attempt 2")
    stdout = _cli([str(tmp_path / "runs"), f"--out={tmp_path / 'out'}", "--no-plots"])
    assert "## Not scored" in stdout and "## resnet" not in stdout


def test_an_unfinished_result_log_in_a_tree_counts_as_not_converged(shared_data_dir, tmp_path):
    """In a submission tree it is one of the result's runs, never converged (the summarizer
    drops it too); the verdict says why. Bites: status 'incomplete' without the reason."""
    folder = tmp_path / "Org" / "results" / "sys" / "resnet"
    for i in range(5):
        src = shared_data_dir / JAX_RESNET / f"result_{i}.txt"
        splice_preemptions(src, folder / f"result_{i}.txt", [3.0], unfinished=i == 2)
    tree = load_tree(tmp_path / "Org")
    check_runs(tree.all_runs())
    rescore(tree)
    (res,) = tree.results
    assert res.minutes is not None and res.minutes == official_score(folder)
    assert "result_2: unfinished: preempted at step 200" in res.verdict()


def test_attempt_logs_and_single_attempt_logs_of_resumed_runs_are_never_scored(
    shared_data_dir, tmp_path
):
    """Bites: scoring a resumed run whose mlperf_log.txt holds only its last attempt (the
    pre-one-log layout), or scoring mlperf_log.attempt<N>.txt files."""
    src = shared_data_dir / JAX_RESNET / "result_0.txt"
    legacy = _workdir(tmp_path / "runs/legacy", _summary(attempts=2, resumed=True))
    shutil.copy(src, legacy / "mlperf_log.txt")  # no tpubench_resume line: last attempt only
    shutil.copy(src, legacy / "mlperf_log.attempt1.txt")
    shutil.copy(src, legacy / "mlperf_log.failed_attempt2.txt")
    tree = load_tree(tmp_path / "runs")
    assert tree.results == []
    reasons = {pathlib.Path(n.path).name: n.reason for n in tree.not_scored}
    assert reasons["legacy"].startswith("resumed run (2 attempts per summary.json) whose "
                                        "mlperf_log.txt holds only its last attempt")
    assert reasons["mlperf_log.attempt1.txt"].startswith("log of attempt 1 of the run")
    assert reasons["mlperf_log.failed_attempt2.txt"].startswith("log of failed attempt 2")


def test_an_mlperf_runs_target_comes_from_the_rules_never_from_its_summary(
    shared_data_dir, tmp_path
):
    """Bites: taking the target from summary.json (0.99 here: every run would miss it)."""
    for i in range(5):
        work = _workdir(tmp_path / f"runs/run_{i}", _summary(target=0.99, final_quality=0.2))
        shutil.copy(shared_data_dir / JAX_RESNET / f"result_{i}.txt", work / "mlperf_log.txt")
    (res,) = load_tree(tmp_path / "runs").results
    assert res.verdict() == "valid" and all(r.reached_target for r in res.runs)
    assert res.runs[0].target.thresholds == {"quality": 0.759}


def test_open_division_and_non_mlperf_runs_are_reported_apart_with_a_qualifier(
    shared_data_dir, tmp_path
):
    """A workdir whose summary says is_mlperf but whose log says division open is no MLPerf
    result: it is listed apart, under a qualified name. Bites: trusting is_mlperf alone."""
    work = _workdir(tmp_path / "runs/open", _summary())
    log = (shared_data_dir / JAX_RESNET / "result_0.txt").read_text()
    opened = log.replace('"submission_division", "value": "closed"',
                         '"submission_division", "value": "open"')
    assert opened != log
    (work / "mlperf_log.txt").write_text(opened)
    tree = load_tree(tmp_path / "runs")
    assert tree.results == []
    (run,) = tree.mini_runs
    assert run.division == "open" and not run.is_mlperf
    out = tmp_path / "out"
    stdout = _cli([str(tmp_path / "runs"), f"--out={out}", "--no-plots"])
    assert "## resnet" not in stdout
    assert "| resnet [full] | 4096xTPU_v3 | open division in its log" in stdout
    (row,) = json.loads((out / "report.json").read_text())["mini_runs_not_mlperf"]
    assert row["why_not_mlperf"].startswith("open division")
