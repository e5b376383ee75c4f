"""Reading runs: `:::MLLOG` result logs and our own run work directories, as `Run` records.

A `Run` is what scoring, tables and plots need from one training run: its run time
(`run_stop - run_start`), how it ended, and its quality curve. Two sources:

- an MLPerf result log (`results/<system>/<benchmark>/result_<i>.txt`), parsed line by line;
- one of our work directories (`summary.json` + `mlperf_log.txt`), where the log, when present,
  still gives the clock and the summary gives the platform, config and `is_mlperf`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
from typing import Any

from tpubench.report.targets import QualityTarget, target_for

MLLOG_PREFIX = ":::MLLOG"


@dataclasses.dataclass(frozen=True)
class EvalPoint:
    """One evaluation: minutes since run_start and the (primary) quality metric."""

    elapsed_min: float
    quality: float


@dataclasses.dataclass
class Run:
    """One training run, from whichever source.

    `status` is "success", "aborted" (the run said so: `abort`/`aborted`) or "incomplete" (no
    run_start/run_stop in the log). `reached_target` is None when the benchmark's target is
    unknown (e.g. a mini config whose summary does not say).
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
    compliance: Any = None  # a tpubench.mllog.ComplianceResult once checked

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
        if self.minutes is None:
            return "no run_start/run_stop"
        if self.status != "success":
            return f"status {self.status}"
        if self.reached_target is False:
            return "target not reached"
        if self.compliance is not None and not self.compliance.valid:
            return "fails compliance"
        return ""


def read_mllog(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The `:::MLLOG` records of a file, in order (other lines, e.g. stdout noise, skipped)."""
    records = []
    with open(path, errors="replace") as f:
        for line in f:
            at = line.find(MLLOG_PREFIX)
            if at < 0:
                continue
            try:
                records.append(json.loads(line[at + len(MLLOG_PREFIX):]))
            except json.JSONDecodeError:
                continue
    return records


def _first(records: list[dict], key: str) -> dict | None:
    return next((r for r in records if r.get("key") == key), None)


def _status(stop: dict | None) -> str:
    if stop is None:
        return "incomplete"
    status = str((stop.get("metadata") or {}).get("status", "")).lower()
    if status == "success":
        return "success"
    return "aborted" if status.startswith("abort") else (status or "incomplete")


def run_from_log(
    path: str | os.PathLike, system: str, benchmark: str | None = None, is_mlperf: bool = True
) -> Run:
    """Parse one MLPerf result log into a `Run` (run time, status, quality curve, target)."""
    records = read_mllog(path)
    bench_rec = _first(records, "submission_benchmark")
    benchmark = (bench_rec or {}).get("value") or benchmark or "unknown"
    start, stop = _first(records, "run_start"), _first(records, "run_stop")
    minutes = None
    if start is not None and stop is not None:
        # Same arithmetic as the official summarizer (ms / 60 / 1000), so scores agree bit for bit.
        minutes = (float(stop["time_ms"]) - float(start["time_ms"])) / 60 / 1000
    gbs = (_first(records, "global_batch_size") or {}).get("value")
    target = target_for(benchmark, global_batch_size=gbs)
    t0 = float(start["time_ms"]) if start is not None else None
    curve, values = [], []
    for r in records:
        if r.get("key") != "eval_accuracy":
            continue
        values.append(r.get("value"))
        if t0 is not None and target is not None:
            primary = target.primary_value(r.get("value"))
            if primary is not None:
                curve.append(EvalPoint((float(r["time_ms"]) - t0) / 60_000.0, primary))
    reached = None if target is None else any(target.reached(v) for v in values)
    final = curve[-1].quality if curve else None
    return Run(
        path=os.fspath(path), system=system, benchmark=benchmark, minutes=minutes,
        status=_status(stop), curve=curve, target=target, reached_target=reached,
        final_quality=final, is_mlperf=is_mlperf, log_path=os.fspath(path),
    )


_CHIPS_IN_PLATFORM = re.compile(r"^\s*(\d+)\s*x", re.IGNORECASE)


def chips_from_platform(platform: str) -> int | None:
    """'8xTPU v4' or '1xcpu' -> 8 / 1; None when the platform string does not say."""
    m = _CHIPS_IN_PLATFORM.match(platform or "")
    return int(m.group(1)) if m else None


def run_from_workdir(summary_path: str | os.PathLike) -> Run:
    """A `Run` from one of our work directories (`summary.json`, plus `mlperf_log.txt` if any).

    The clock comes from the MLPerf log when it has run_start/run_stop (the MLPerf definition);
    otherwise from the summary (`time_to_target_s`, or the last eval of an aborted run).
    """
    summary_path = pathlib.Path(summary_path)
    summary = json.loads(summary_path.read_text())
    workdir = summary_path.parent
    system = str(summary.get("platform") or "unknown")
    is_mlperf = bool(summary.get("is_mlperf", False))
    log = workdir / "mlperf_log.txt"
    base = run_from_log(log, system, summary.get("workload"), is_mlperf) if log.exists() else None

    history = summary.get("quality_history") or []
    curve = [EvalPoint(float(h["elapsed_s"]) / 60.0, float(h["quality"])) for h in history]
    raw_status = str(summary.get("status") or "incomplete").lower()
    status = "aborted" if raw_status.startswith("abort") else raw_status
    target = _summary_target(summary) or (base.target if base is not None else None)
    minutes = base.minutes if base is not None else None
    if minutes is None:
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
    return Run(
        path=os.fspath(workdir), system=system,
        # MLPerf runs are named by their MLPerf benchmark (to sit beside published results);
        # mini runs by their workload.
        benchmark=(base.benchmark if is_mlperf and base and base.benchmark != "unknown" else None)
        or str(summary.get("workload") or "unknown"),
        minutes=minutes, status=status, curve=curve or (base.curve if base else []),
        target=target, reached_target=reached,
        final_quality=None if final is None else float(final),
        is_mlperf=is_mlperf, log_path=os.fspath(log) if log.exists() else None,
        config=str(summary.get("config") or ""),
    )


def _summary_target(summary: dict) -> QualityTarget | None:
    """The target a summary declares: a number (+ `target_metric`, `higher_is_better`), or a
    dict {"metric", "value", "higher_is_better"}."""
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
