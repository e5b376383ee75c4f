"""Rendering scored results as Markdown tables (one per benchmark) and as JSON.

Closed-division MLPerf results, open-division results and runs that are not MLPerf (minis,
smoke configs, overridden configs) never share a table: the latter two get their own sections
that say what they are, and their benchmark names always carry a qualifier. What was found but
cannot be scored is listed last, with the reason.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from tpubench.mlperf import rules
from tpubench.report.logs import Run
from tpubench.report.runs import finite, run_facts, runs_table, why_not_mlperf
from tpubench.report.scoring import BenchmarkResult, mini_summary
from tpubench.report.targets import target_for

BENCHMARK_ORDER = ("resnet", "ssd", "maskrcnn", "gnmt", "transformer", "bert", "dlrm", "minigo")
OPEN_QUALIFIER = " (open division)"


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
        b: sorted(groups[b], key=lambda r: (not r.valid, r.minutes is None, r.minutes or inf,
                                            r.system))
        for b in sorted(groups, key=benchmark_sort_key)
    }


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |"


def benchmark_table(results: list[BenchmarkResult], show_source: bool = False) -> str:
    """A Markdown table of one benchmark's results (system, chips, score, compliance, ...)."""
    head = ["system", "chips", "framework", "runs", "score (min)", "chip-min",
            f"compliance ({rules.RULESET})", "quality reached", "resumed runs", "result"]
    if show_source:
        head.insert(0, "source")
    lines = [_row(head), _row(["---"] * len(head))]
    for r in results:
        cells = [r.system, r.chips or "?", r.framework or "?", r.runs_cell(), r.score_cell(),
                 _fmt(r.chip_minutes, 1) if r.complete else "-", r.compliance_summary(),
                 r.quality_summary(), r.resumed_summary(), r.verdict()]
        if show_source:
            cells.insert(0, r.source)
        lines.append(_row(cells))
    return "\n".join(lines)


def _best_cell(s: dict) -> str:
    """The best finite final quality, and how many NaN runs it leaves out."""
    best = _fmt(s["best_final_quality"], 4)
    return best + (f" ({s['nan_runs']} NaN left out)" if s["nan_runs"] else "")


def mini_table(runs: list[Run]) -> str:
    """A Markdown table of runs that are not MLPerf, grouped by workload, config, platform and
    why their config is not MLPerf (a mini, or an open-division run's reasons)."""
    groups: dict[tuple[str, str, str, str], list[Run]] = defaultdict(list)
    for run in runs:
        groups[(run.benchmark, run.config, run.system, run.not_mlperf)].append(run)
    head = ["workload [config] (not MLPerf)", "platform", "why not MLPerf", "runs",
            "reached target", "aborted (NaN)", "median time to target (s)",
            "best final quality", "target", "resumed runs"]
    lines = [_row(head), _row(["---"] * len(head))]
    for (workload, config, platform, why), group in sorted(groups.items()):
        s = mini_summary(group)
        resumed = [r for r in group if r.resumed]
        lines.append(_row([
            f"{workload} [{config or '?'}]", platform, why or why_not_mlperf(group[0]),
            s["runs"], f"{s['reached_target']}/{s['runs']}",
            f"{s['aborted_runs']} ({s['nan_runs']} NaN)",
            _fmt(s["median_time_to_target_s"], 1), _best_cell(s), s["target"] or "?",
            ", ".join(f"{r.attempts} attempts" for r in resumed) or "-",
        ]))
    return "\n".join(lines)


def _sections(results: list[BenchmarkResult], show_source: bool, qualifier: str = "") -> list:
    parts: list[str] = []
    for benchmark, group in by_benchmark(results).items():
        target = target_for(benchmark)
        parts += ["", f"## {benchmark}{qualifier}"
                  + (f" (target: {target.describe()})" if target else ""),
                  "", benchmark_table(group, show_source)]
    return parts


def markdown_report(
    results: list[BenchmarkResult], mini_runs: list[Run], title: str, show_source: bool = False,
    open_results: list[BenchmarkResult] | None = None, not_scored: list | None = None,
    workdir_runs: list[Run] | None = None,
) -> str:
    """The whole report: one section per closed-division benchmark, then open-division results,
    runs that are not MLPerf, every run workdir on its own row and what could not be scored,
    each apart."""
    parts = [f"# {title}", "",
             f"Scores by the MLPerf Training {rules.ROUND} rules (ruleset {rules.RULESET}, "
             "targets from tpubench.mlperf.rules): run time = run_stop - run_start (a resumed "
             "run's "
             "one log spans every attempt, outage included); olympic mean of N runs (drop "
             "fastest and slowest); one non-converged run counts as the slowest, two make the "
             "result invalid; fewer runs than required: INCOMPLETE, not valid, left out of "
             "comparisons and profiles. chip-min = score x chips."]
    parts += _sections(results, show_source)
    if open_results:
        parts += ["", "# Open division results (not comparable with closed division)", "",
                  "Scored by the same rules, never compared with closed-division results or "
                  "profiled with them."]
        parts += _sections(open_results, show_source, OPEN_QUALIFIER)
    if mini_runs:
        parts += ["", "## Mini and smoke runs (not MLPerf results)", "",
                  "These runs use small datasets, their own targets or a changed benchmark; "
                  "they are never scored as MLPerf results.", "", mini_table(mini_runs)]
    if workdir_runs:
        parts += ["", "## Every run workdir", "",
                  "One row per run: how it ended, examples/s and MFU from its summary.json, "
                  "the official checker's verdict on its mlperf_log.txt (a mini's log is judged "
                  "by MLPerf's rules too, which a mini does not follow), and every reason it is "
                  "not (or does not count as) an MLPerf result.", "", runs_table(workdir_runs)]
    if not_scored:
        parts += ["", "## Not scored", "", _row(["path", "reason"]), _row(["---", "---"])]
        parts += [_row([n.path, n.reason]) for n in not_scored]
    return "\n".join(parts) + "\n"


def run_json(run: Run) -> dict:
    """One run as JSON: time, status, attempts, why it does (not) count, compliance, curve."""
    return {
        "path": run.path,
        "minutes": run.minutes,
        "status": run.status,
        "attempts": run.attempts,
        "resumed": run.resumed,
        "reached_target": run.reached_target,
        "final_quality": finite(run.final_quality),  # NaN: null (report.json stays JSON)
        "counted": run.counted,
        "not_counted_because": run.why_not_counted() or None,
        "compliance_valid": None if run.compliance is None else run.compliance.valid,
        "compliance_errors": [] if run.compliance is None else run.compliance.failed_checks(),
        "curve": [[p.elapsed_min, finite(p.quality)] for p in run.curve],
        **(run_facts(run) if run.workdir_run else {}),
    }


def result_json(r: BenchmarkResult) -> dict:
    """One benchmark result as JSON (score, verdicts, and every run)."""
    return {
        "source": r.source,
        "system": r.system,
        "benchmark": r.benchmark if r.division != "open" else r.benchmark + OPEN_QUALIFIER,
        "division": r.division,
        "chips": r.chips,
        "framework": r.framework,
        "runs_found": len(r.runs),
        "runs_required": r.required,
        "complete": r.complete,
        "extra_runs": r.extra_runs,
        "resumed_runs": len(r.resumed_runs),
        "score_minutes": r.minutes,
        "chip_minutes": r.chip_minutes,
        "runs_averaged": list(r.score.used) if r.score else [],
        "valid": r.valid,
        "verdict": r.verdict(),
        "compliance": r.compliance_summary(),
        "quality": r.quality_summary(),
        "runs": [run_json(run) for run in r.runs],
    }


def json_report(
    results: list[BenchmarkResult], mini_runs: list[Run],
    open_results: list[BenchmarkResult] | None = None, not_scored: list | None = None,
) -> dict:
    """The whole report as a JSON-serialisable dict; open division, mini runs and what was not
    scored under their own keys."""
    return {
        "ruleset": f"{rules.USAGE} {rules.RULESET}",
        "results": [result_json(r) for rs in by_benchmark(results).values() for r in rs],
        "open_division_results": [
            result_json(r) for rs in by_benchmark(open_results or []).values() for r in rs],
        "mini_runs_not_mlperf": [
            {"workload": run.benchmark, "config": run.config, "platform": run.system,
             "why_not_mlperf": why_not_mlperf(run), **run_json(run)} for run in mini_runs
        ],
        "not_scored": [{"path": n.path, "reason": n.reason} for n in not_scored or []],
    }
