"""One row per run workdir: how it ended, why it is (not) an MLPerf result, throughput, MFU and
the compliance checker's verdict.

A run is not an MLPerf result for one or more of these reasons, each said in its own words: its
config is not an MLPerf config (a mini or smoke config: `is_mlperf` false, its own data set and
target, its log's platform names the config), it is open division (its `open_reasons`, or its
log), it did not end in success (the loop's error, e.g. the loss became NaN, or the target was
not reached within its budget), or the official checker rejects its log.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from tpubench.mlperf import rules
from tpubench.report.logs import Run


def finite(value: float | None) -> float | None:
    """`value`, or None when it is missing or not finite (NaN, inf)."""
    return value if value is not None and math.isfinite(value) else None


def _first_sentence(text: str) -> str:
    head = text.strip().split(". ", 1)[0]
    return head.rstrip(".")


def status_reason(run: Run) -> str:
    """Why the run did not end in success at its target ('' when it did)."""
    if run.status == "success" and run.reached_target is not False:
        return ""
    if run.status == "unfinished":
        return run.not_scored or "unfinished: preempted and not resumed to run_stop"
    if run.error:
        return f"{run.status}: {_first_sentence(run.error)}"
    if run.final_quality is not None and not math.isfinite(run.final_quality):
        return f"{run.status}: its quality is {run.final_quality} (diverged)"
    if run.status == "aborted":
        target = f" ({run.target.describe()})" if run.target else ""
        final = "" if run.final_quality is None else f", final {run.final_quality:.4g}"
        return f"aborted: budget spent before its target{target}{final}"
    if run.status == "success":
        return "target not reached"
    return f"status {run.status}: no run_stop" if run.minutes is None else f"status {run.status}"


def compliance_cell(run: Run) -> str:
    """The official checker's verdict: 'VALID', 'INVALID: <first failed check>' or
    'not checked' (no log, or --no-compliance)."""
    if run.compliance is None:
        return "not checked" + ("" if run.log_path else " (no log)")
    if run.compliance.valid:
        return "VALID"
    failed = run.compliance.failed_checks()
    first = failed[0].removeprefix("ERROR:").strip() if failed else ""
    return "INVALID" + (f": {first}" if first else "")


def why_not_mlperf(run: Run) -> str:
    """Every reason this run is not (or does not count as) an MLPerf result, '; '-joined: its
    config, how it ended, its compliance verdict ('' for an MLPerf run that counts)."""
    reasons = [run.not_mlperf if not run.is_mlperf else "", status_reason(run)]
    if run.is_mlperf and run.format_problem:
        reasons.append(run.format_problem)
    # A mini's log follows its own target, not MLPerf's: being a mini already says it all.
    if run.compliance is not None and not run.compliance.valid and not run.mini:
        reasons.append("the official checker rejects its log (see compliance)")
    if not run.is_mlperf and not run.not_mlperf:  # a log with no summary beside it
        reasons.insert(0, f"not an MLPerf run (config {run.config or '?'})")
    return "; ".join(r for r in reasons if r)


def examples_cell(run: Run) -> str:
    """Training examples per second from summary.json ('n/a' when it has none)."""
    return "n/a" if run.examples_per_s is None else f"{run.examples_per_s:.1f}"


def mfu_cell(run: Run) -> str:
    """Model FLOPs utilisation from summary.json as a percentage ('n/a' when null: unknown
    peak or FLOPs, or above 100%)."""
    return "n/a" if finite(run.mfu) is None else f"{100 * run.mfu:.3g}%"


def run_name(run: Run) -> str:
    """A run's short name: its folder, with its config ('mini/run_0')."""
    name = run.path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".txt")
    return f"{run.config}/{name}" if run.config else name


def unique_names(runs: list[Run]) -> list[str]:
    """Each run's label: `run_name`, or, where two collide, its path below the folder that
    holds them all."""
    short = [run_name(r) for r in runs]
    if len(set(short)) == len(short):
        return short
    paths = [os.path.abspath(r.path) for r in runs]
    common = os.path.commonpath(paths)
    return [os.path.relpath(p, common) for p in paths]


def _row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |"


def runs_table(runs: list[Run]) -> str:
    """A Markdown table with one row per run workdir, sorted by workload, config and path."""
    head = ["run", "workload", "platform", "status", "final quality", "target", "run time (s)",
            "examples/s", "MFU", f"compliance ({rules.RULESET})", "why not an MLPerf result"]
    lines = [_row(head), _row(["---"] * len(head))]
    runs = sorted(runs, key=lambda r: (r.benchmark, r.config, r.path))
    for run, name in zip(runs, unique_names(runs), strict=True):
        quality = "-" if run.final_quality is None else f"{run.final_quality:.4f}"
        seconds = "-" if run.minutes is None else f"{run.minutes * 60:.1f}"
        lines.append(_row([
            name, run.benchmark, run.system, run.status, quality,
            run.target.describe() if run.target else "?", seconds, examples_cell(run),
            mfu_cell(run), compliance_cell(run), why_not_mlperf(run) or "- (counts)",
        ]))
    return "\n".join(lines)


def run_facts(run: Run) -> dict:
    """The per-run facts of the table above, for report.json."""
    return {
        "why_not_mlperf": why_not_mlperf(run),
        "error": run.error or None,
        "examples_per_s": finite(run.examples_per_s),
        "mfu": finite(run.mfu),
        "compliance": compliance_cell(run),
        "metrics_jsonl": run.metrics_path,
    }
