"""Rendering scored results as Markdown tables (one per benchmark) and as JSON.

MLPerf results and mini runs never share a table: mini runs get their own section that says
they are not MLPerf results.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from tpubench.report.logs import Run
from tpubench.report.scoring import BenchmarkResult, mini_summary
from tpubench.report.targets import target_for

BENCHMARK_ORDER = ("resnet", "ssd", "maskrcnn", "gnmt", "transformer", "bert", "dlrm", "minigo")


def benchmark_sort_key(name: str) -> tuple[int, str]:
    """MLPerf's usual order first (resnet, ssd, ...), then any other name alphabetically."""
    order = BENCHMARK_ORDER.index(name) if name in BENCHMARK_ORDER else len(BENCHMARK_ORDER)
    return order, name


def by_benchmark(results: Iterable[BenchmarkResult]) -> dict[str, list[BenchmarkResult]]:
    """Results grouped per benchmark (in MLPerf order), fastest valid score first in each."""
    groups: dict[str, list[BenchmarkResult]] = defaultdict(list)
    for r in results:
        groups[r.benchmark].append(r)
    inf = float("inf")
    return {
        b: sorted(groups[b], key=lambda r: (r.minutes is None, r.minutes or inf, r.system))
        for b in sorted(groups, key=benchmark_sort_key)
    }


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |"


def benchmark_table(results: list[BenchmarkResult], show_source: bool = False) -> str:
    """A Markdown table of one benchmark's results (system, chips, score, compliance, ...)."""
    head = ["system", "chips", "framework", "runs", "score (min)", "chip-min",
            "compliance (0.7.0)", "quality reached", "result"]
    if show_source:
        head.insert(0, "source")
    lines = [_row(head), _row(["---"] * len(head))]
    for r in results:
        runs = f"{len(r.runs)}/{r.required}" if r.required else str(len(r.runs))
        cells = [r.system, r.chips or "?", r.framework or "?", runs, _fmt(r.minutes),
                 _fmt(r.chip_minutes, 1), r.compliance_summary(), r.quality_summary(),
                 r.verdict()]
        if show_source:
            cells.insert(0, r.source)
        lines.append(_row(cells))
    return "\n".join(lines)


def mini_table(runs: list[Run]) -> str:
    """A Markdown table of mini/smoke runs grouped by workload, config and platform."""
    groups: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
    for run in runs:
        groups[(run.benchmark, run.config, run.system)].append(run)
    head = ["workload", "config", "platform", "runs", "reached target",
            "median time to target (s)", "best final quality", "target"]
    lines = [_row(head), _row(["---"] * len(head))]
    for (workload, config, platform), group in sorted(groups.items()):
        s = mini_summary(group)
        lines.append(_row([
            workload, config or "?", platform, s["runs"], f"{s['reached_target']}/{s['runs']}",
            _fmt(s["median_time_to_target_s"], 1), _fmt(s["best_final_quality"], 4),
            s["target"] or "?",
        ]))
    return "\n".join(lines)


def markdown_report(
    results: list[BenchmarkResult], mini_runs: list[Run], title: str, show_source: bool = False
) -> str:
    """The whole report: one section per benchmark, then mini runs apart."""
    parts = [f"# {title}", "",
             "Scores by the MLPerf Training v0.7 rules: run time = run_stop - run_start; olympic "
             "mean of N runs (drop fastest and slowest); one non-converged run counts as the "
             "slowest, two make the result invalid. chip-min = score x chips."]
    for benchmark, group in by_benchmark(results).items():
        target = target_for(benchmark) or (group[0].runs[0].target if group[0].runs else None)
        parts += ["", f"## {benchmark}" + (f" (target: {target.describe()})" if target else ""),
                  "", benchmark_table(group, show_source)]
    if mini_runs:
        parts += ["", "## Mini and smoke runs (not MLPerf results)", "",
                  "These runs use small datasets and their own targets; they are never scored "
                  "as MLPerf results.", "", mini_table(mini_runs)]
    return "\n".join(parts) + "\n"


def run_json(run: Run) -> dict:
    """One run as JSON: time, status, why it does (not) count, compliance, curve."""
    return {
        "path": run.path,
        "minutes": run.minutes,
        "status": run.status,
        "reached_target": run.reached_target,
        "final_quality": run.final_quality,
        "counted": run.counted,
        "not_counted_because": run.why_not_counted() or None,
        "compliance_valid": None if run.compliance is None else run.compliance.valid,
        "compliance_errors": [] if run.compliance is None else run.compliance.failed_checks(),
        "curve": [[p.elapsed_min, p.quality] for p in run.curve],
    }


def result_json(r: BenchmarkResult) -> dict:
    """One benchmark result as JSON (score, verdicts, and every run)."""
    return {
        "source": r.source,
        "system": r.system,
        "benchmark": r.benchmark,
        "chips": r.chips,
        "framework": r.framework,
        "runs_found": len(r.runs),
        "runs_required": r.required,
        "score_minutes": r.minutes,
        "chip_minutes": r.chip_minutes,
        "runs_averaged": list(r.score.used) if r.score else [],
        "valid": r.valid,
        "verdict": r.verdict(),
        "compliance": r.compliance_summary(),
        "quality": r.quality_summary(),
        "runs": [run_json(run) for run in r.runs],
    }


def json_report(results: list[BenchmarkResult], mini_runs: list[Run]) -> dict:
    """The whole report as a JSON-serialisable dict; mini runs under their own key."""
    return {
        "ruleset": "training 0.7.0",
        "results": [result_json(r) for rs in by_benchmark(results).values() for r in rs],
        "mini_runs_not_mlperf": [
            {"workload": run.benchmark, "config": run.config, "platform": run.system,
             **run_json(run)} for run in mini_runs
        ],
    }
