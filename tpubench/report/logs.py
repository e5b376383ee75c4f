"""Reading runs: `:::MLLOG` result logs and our own run work directories, as `Run` records.

A `Run` is what scoring, tables and plots need from one training run: its run time
(`run_stop - run_start`), how it ended, how many attempts it took, and its quality curve. Two
sources:

- an MLPerf result log (`results/<system>/<benchmark>/result_<i>.txt`), parsed line by line;
- one of our work directories (`summary.json` + `mlperf_log.txt`). For an MLPerf run the log
  alone gives the clock, the quality reached and the target (from `tpubench.mlperf.rules`, never
  from the summary); the summary gives the platform, config and `is_mlperf`.

Resumed runs (see docs/report.md): a preempted tpubench run keeps ONE log across attempts:
attempt 1's lines, a `tpubench_preempted` event, then per resume a `tpubench_resume` event
(value = attempt number), and one `run_stop`. Its time is `run_stop - run_start` of that one
log, the outage and the re-init included (the MLPerf clock never pauses); its attempt count is
1 + the number of `tpubench_resume` lines. A log that ends preempted, without `run_stop`, is an
unfinished run and is never scored.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
from typing import Any

from tpubench.mlperf.mllog import PREEMPTED_KEY, RESUME_KEY
from tpubench.report.targets import QualityTarget, target_for

MLLOG_PREFIX = ":::MLLOG"
METRICS_NAME = "metrics.jsonl"  # what tpubench.loops.writers writes (a layer above this one)


@dataclasses.dataclass(frozen=True)
class EvalPoint:
    """One evaluation: minutes since run_start and the (primary) quality metric."""

    elapsed_min: float
    quality: float


@dataclasses.dataclass
class Run:
    """One training run, from whichever source.

    `status` is "success", "aborted" (the run said so: `abort`/`aborted`), "unfinished" (it was
    preempted and never resumed to `run_stop`) or "incomplete" (no run_start/run_stop).
    `reached_target` is None when the benchmark's target is unknown (e.g. a mini config whose
    summary does not say). `not_scored` is set when the run must not be scored at all (it is
    listed apart with this reason); `format_problem` when the log is not in the v0.7 format.
    """

    path: str
    system: str
    benchmark: str
    minutes: float | None
    status: str
    curve: list[EvalPoint]
    target: QualityTarget | None
    reached_target: bool | None
    final_quality: float | None
    is_mlperf: bool = True
    log_path: str | None = None
    config: str = ""
    compliance: Any = None  # a tpubench.mlperf.mllog.ComplianceResult once checked
    attempts: int = 1
    division: str = ""  # "closed", "open", or "" when the log does not say
    preempted_at_step: int | None = None  # set when the log ends preempted
    not_scored: str = ""
    format_problem: str = ""
    logged_platform: str = ""  # the log's submission_platform (a mini's names its config)
    # What only a workdir's summary.json says (`run_from_workdir`; None/"" for a bare log).
    workdir_run: bool = False
    not_mlperf: str = ""  # why its config is not an MLPerf config ("" when it is)
    mini: bool = False  # a mini/smoke config (is_mlperf false, no open_reasons)
    error: str = ""  # why the run stopped, when the loop said (e.g. the loss became NaN)
    examples_per_s: float | None = None
    mfu: float | None = None
    run_start_unix: float | None = None
    metrics_path: str | None = None  # its metrics.jsonl, when there is one

    @property
    def resumed(self) -> bool:
        """The run took more than one attempt (it was preempted and resumed)."""
        return self.attempts > 1

    @property
    def converged(self) -> bool:
        """Ended with status success and (where known) reached its quality target."""
        return self.status == "success" and self.reached_target is not False

    @property
    def counted(self) -> bool:
        """Counts toward an olympic score: converged, timed and, if checked, compliant.

        The official summarizer drops runs that fail the compliance checker exactly as it drops
        runs that did not converge; so do we.
        """
        compliant = self.compliance is None or self.compliance.valid
        return self.converged and self.minutes is not None and compliant

    def why_not_counted(self) -> str:
        """A short reason this run does not count toward the score ('' when it does)."""
        if self.status == "unfinished":
            return unfinished_reason(self)
        if self.format_problem:
            return self.format_problem
        if self.minutes is None:
            return "no run_start/run_stop"
        if self.status != "success":
            return f"status {self.status}"
        if self.reached_target is False:
            return "target not reached"
        if self.compliance is not None and not self.compliance.valid:
            return "fails compliance"
        return ""


def unfinished_reason(run: Run) -> str:
    """Why an unfinished (preempted, never resumed to run_stop) run is not scored."""
    step = "" if run.preempted_at_step is None else f" at step {run.preempted_at_step}"
    return (f"unfinished: preempted{step} in attempt {run.attempts} and not resumed to run_stop "
            "(rerun the same command to resume it)")


def read_mllog(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The `:::MLLOG` records of a file, in order (other lines, e.g. stdout noise, skipped)."""
    records = []
    with open(path, errors="replace") as f:
        for line in f:
            at = line.find(MLLOG_PREFIX)
            if at < 0:
                continue
            try:
                record = json.loads(line[at + len(MLLOG_PREFIX):])
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                records.append(record)
    return records


def _first(records: list[dict], key: str) -> dict | None:
    return next((r for r in records if r.get("key") == key), None)


def _time_ms(record: dict | None) -> float | None:
    """A record's `time_ms` (the v0.7 timestamp); None when absent or not a number."""
    if record is None:
        return None
    try:
        return float(record["time_ms"])
    except (KeyError, TypeError, ValueError):
        return None


def _status(stop: dict | None) -> str:
    if stop is None:
        return "incomplete"
    status = str((stop.get("metadata") or {}).get("status", "")).lower()
    if status == "success":
        return "success"
    return "aborted" if status.startswith("abort") else (status or "incomplete")


def _attempts(records: list[dict]) -> tuple[int, int | None]:
    """(attempts, step of the last preemption if the log ends preempted, else None)."""
    attempts, preempted_at = 1, None
    for r in records:
        if r.get("key") == RESUME_KEY:
            attempts += 1
            preempted_at = None
        elif r.get("key") == PREEMPTED_KEY:
            value = r.get("value")
            preempted_at = int(value) if isinstance(value, int | float) else -1
    return attempts, preempted_at


def run_from_log(
    path: str | os.PathLike, system: str, benchmark: str | None = None, is_mlperf: bool = True
) -> Run:
    """Parse one MLPerf result log into a `Run` (run time, status, attempts, curve, target).

    Never raises on a malformed log: what it lacks is recorded in `format_problem`/`status`.
    """
    records = read_mllog(path)
    bench_rec = _first(records, "submission_benchmark")
    platform = str((_first(records, "submission_platform") or {}).get("value") or "")
    benchmark = str((bench_rec or {}).get("value") or benchmark or "unknown")
    division = str((_first(records, "submission_division") or {}).get("value") or "").lower()
    start, stop = _first(records, "run_start"), _first(records, "run_stop")
    t0, t1 = _time_ms(start), _time_ms(stop)
    problem = ""
    if (start is not None and t0 is None) or (stop is not None and t1 is None):
        stamp = "time_s" if any("time_s" in r for r in records) else "no timestamp"
        problem = (f"run_start/run_stop carry {stamp}, not time_ms: not the v0.7 log format "
                   "(the 0.7.0 checker cannot parse it)")
    minutes = None
    if t0 is not None and t1 is not None:
        # Same arithmetic as the official summarizer (ms / 60 / 1000), so scores agree bit for bit.
        minutes = (t1 - t0) / 60 / 1000
    target = target_for(benchmark)
    curve, values = [], []
    for r in records:
        if r.get("key") != "eval_accuracy":
            continue
        values.append(r.get("value"))
        t = _time_ms(r)
        if t0 is not None and t is not None and target is not None:
            primary = target.primary_value(r.get("value"))
            if primary is not None:
                curve.append(EvalPoint((t - t0) / 60_000.0, primary))
    reached = None if target is None else any(target.reached(v) for v in values)
    attempts, preempted_at = _attempts(records)
    status = _status(stop)
    if stop is None and preempted_at is not None:
        status = "unfinished"
    return Run(
        path=os.fspath(path), system=system, benchmark=benchmark, minutes=minutes,
        status=status, curve=curve, target=target, reached_target=reached,
        final_quality=curve[-1].quality if curve else None, is_mlperf=is_mlperf,
        log_path=os.fspath(path), attempts=attempts, division=division,
        preempted_at_step=None if stop is not None else preempted_at, format_problem=problem,
        logged_platform=platform,
    )


_CHIPS_IN_PLATFORM = re.compile(r"^\s*(\d+)\s*x", re.IGNORECASE)


def chips_from_platform(platform: str) -> int | None:
    """'8xTPU v4' or '1xcpu' -> 8 / 1; None when the platform string does not say."""
    m = _CHIPS_IN_PLATFORM.match(platform or "")
    return int(m.group(1)) if m else None


def run_from_workdir(summary_path: str | os.PathLike) -> Run:
    """A `Run` from one of our work directories (`summary.json`, plus `mlperf_log.txt` if any).

    An MLPerf run (`is_mlperf: true` and not open division in its log) is scored from its log
    only: time = run_stop - run_start, target from `tpubench.mlperf.rules`. Without a log, with a
    log that ends preempted, or with a log that holds only the last attempt of a resumed run, it
    gets `not_scored` set. A run that is not MLPerf keeps the summary's own target and clock.
    """
    summary_path = pathlib.Path(summary_path)
    summary = json.loads(summary_path.read_text())
    if not isinstance(summary, dict):
        raise ValueError(f"{summary_path} is not a run summary")
    workdir = summary_path.parent
    system = str(summary.get("platform") or "unknown")
    log = workdir / "mlperf_log.txt"
    base = run_from_log(log, system, summary.get("workload")) if log.exists() else None
    open_division = base is not None and base.division == "open"
    is_mlperf = bool(summary.get("is_mlperf", False)) and not open_division
    if is_mlperf:
        run = _mlperf_run(summary, workdir, system, base)
    else:
        run = _other_run(summary, workdir, system, base, open_division)
    return _with_summary_facts(run, summary, workdir, base)


def _number(value: Any) -> float | None:
    """A summary's number, or None (null, missing, or not a number)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _with_summary_facts(run: Run, summary: dict, workdir: pathlib.Path, base: Run | None) -> Run:
    """`run` with what only summary.json says: why it is not MLPerf, the loop's error,
    throughput, MFU, the clock's start and its metrics.jsonl."""
    metrics = summary.get("metrics") if isinstance(summary.get("metrics"), dict) else {}
    # The workdir may have moved since the run: look beside summary.json, by the file's name.
    jsonl = workdir / pathlib.Path(str(metrics.get("jsonl") or METRICS_NAME)).name
    run.workdir_run = True
    run.not_mlperf = "" if run.is_mlperf else _not_mlperf_reason(summary, base)
    run.mini = not summary.get("is_mlperf") and not summary.get("open_reasons")
    run.error = str(summary.get("error") or "")
    run.examples_per_s = _number(summary.get("train_examples_per_s"))
    run.mfu = _number(summary.get("mfu"))
    run.run_start_unix = _number(summary.get("run_start_unix"))
    run.metrics_path = os.fspath(jsonl) if jsonl.is_file() else None
    return run


def _not_mlperf_reason(summary: dict, base: Run | None) -> str:
    """Why a workdir's config is not an MLPerf config: its open_reasons (an MLPerf config that
    overrides took out of closed division), its log (open although the summary says MLPerf),
    or, for a mini/smoke config, that it is one (its own data set and target)."""
    reasons = [str(r) for r in summary.get("open_reasons") or []]
    if reasons:
        return "open division: " + "; ".join(reasons)
    if summary.get("is_mlperf"):
        return ("open division in its log although summary.json says is_mlperf (the log "
                "decides)")
    facts = ["is_mlperf false"]
    if summary.get("dataset"):
        facts.append(f"data set {summary['dataset']}")
    if base is not None and base.logged_platform:
        facts.append(f"log platform {base.logged_platform}")
    return (f"mini: config {str(summary.get('config') or '?')!r} is not an MLPerf config "
            f"({'; '.join(facts)})")


def _mlperf_run(summary: dict, workdir: pathlib.Path, system: str, base: Run | None) -> Run:
    workload = str(summary.get("workload") or "unknown")
    if base is None:
        target = target_for(workload)
        return Run(
            path=os.fspath(workdir), system=system, benchmark=workload, minutes=None,
            status="incomplete", curve=[], target=target, reached_target=None,
            final_quality=None, config=str(summary.get("config") or ""),
            not_scored="no mlperf_log.txt: an MLPerf score comes from the log's run_start and "
            "run_stop, never from summary.json",
        )
    config = str(summary.get("config") or "")
    run = dataclasses.replace(base, path=os.fspath(workdir), config=config)
    if run.benchmark == "unknown":
        run = dataclasses.replace(run, benchmark=workload, target=target_for(workload))
    summary_attempts = int(summary.get("attempts") or 1)
    if run.status == "unfinished":
        run.not_scored = unfinished_reason(run)
    elif (summary.get("resumed") or summary_attempts > 1) and run.attempts == 1:
        run.not_scored = (
            f"resumed run ({summary_attempts} attempts per summary.json) whose mlperf_log.txt "
            "holds only its last attempt: its run_stop - run_start would leave out the earlier "
            "attempts and the outage (logs written before tpubench kept one log per run)")
    return run


def _other_run(
    summary: dict, workdir: pathlib.Path, system: str, base: Run | None, open_division: bool
) -> Run:
    history = summary.get("quality_history") or []
    curve = [EvalPoint(float(h["elapsed_s"]) / 60.0, float(h["quality"])) for h in history]
    raw_status = str(summary.get("status") or "incomplete").lower()
    status = "aborted" if raw_status.startswith("abort") else raw_status
    target = _summary_target(summary) or (base.target if base is not None else None)
    minutes = base.minutes if base is not None else None
    if minutes is None and (base is None or base.status != "unfinished"):
        seconds = summary.get("time_to_target_s")
        if seconds is None and curve:
            seconds = curve[-1].elapsed_min * 60.0
        minutes = None if seconds is None else float(seconds) / 60.0
    final = summary.get("final_quality")
    reached = None
    if target is not None:
        reached = any(target.reached(p.quality) for p in curve) or (
            final is not None and target.reached(final)
        )
    elif status == "success":
        reached = True
    attempts = base.attempts if base is not None else int(summary.get("attempts") or 1)
    run = Run(
        path=os.fspath(workdir), system=system, benchmark=str(summary.get("workload") or "unknown"),
        minutes=minutes, status=status, curve=curve or (base.curve if base else []),
        target=target, reached_target=reached,
        final_quality=None if final is None else float(final),
        is_mlperf=False, log_path=os.fspath(base.log_path) if base else None,
        config=str(summary.get("config") or ""), attempts=attempts,
        division="open" if open_division else (base.division if base else ""),
    )
    if base is not None and base.status == "unfinished":
        run.status, run.preempted_at_step = "unfinished", base.preempted_at_step
        run.not_scored = unfinished_reason(run)
    return run


def _summary_target(summary: dict) -> QualityTarget | None:
    """The target a summary declares: a number (+ `target_metric`, `higher_is_better`), or a
    dict {"metric", "value", "higher_is_better"}. Used only for runs that are not MLPerf."""
    t = summary.get("target")
    if isinstance(t, int | float):
        return QualityTarget(
            str(summary.get("target_metric") or "quality"), {"quality": float(t)},
            higher_is_better=bool(summary.get("higher_is_better", True)),
        )
    if isinstance(t, dict) and "value" in t:
        return QualityTarget(
            str(t.get("metric", "quality")), {"quality": float(t["value"])},
            higher_is_better=bool(t.get("higher_is_better", True)),
        )
    return None
