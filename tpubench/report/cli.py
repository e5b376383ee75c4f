"""`tpubench report RESULTS_DIR [--out=DIR] [--compare=DIR ...] [--per-chip] [--html]`.

Scores every system and benchmark under RESULTS_DIR by the MLPerf Training v0.7 rules, checks
each log with the official compliance checker, prints the Markdown tables, and writes
`report.md`, `report.json` and PNG plots to --out (with --html also `report.html`: the tables
and the plots inlined in one self-contained page). Run workdirs also get one row each (status,
examples/s, MFU, compliance, why not MLPerf) and, per workload, `curves_<workload>.png`: quality,
training loss and examples/s against time, with the points in `curves_<workload>.csv`.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from tpubench.errors import UsageError
from tpubench.report import compare, curves, plots, profiles, tables
from tpubench.report import runs as runs_lib
from tpubench.report.compliance import ComplianceCache, check_runs
from tpubench.report.tree import ResultsTree, load_tree, rescore

DEFAULT_OUT = "tpubench-report"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `tpubench report`."""
    p = argparse.ArgumentParser(
        prog="tpubench report",
        description="MLPerf Training v0.7 scores, compliance verdicts, tables and plots for a "
        "results tree (results/<system>/<benchmark>/result_<i>.txt) or a directory of "
        "tpubench run workdirs (summary.json).",
    )
    p.add_argument("results_dir", help="an MLPerf results tree or a directory of run workdirs")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument("--compare", action="append", default=[], metavar="DIR",
                   help="a published results tree to compare against (repeatable)")
    p.add_argument("--per-chip", action="store_true",
                   help="compare and profile by chip-minutes (score x chips) instead of minutes")
    p.add_argument("--no-compliance", action="store_true",
                   help="skip the official compliance checker (verdicts show 'not checked')")
    p.add_argument("--baseline", default=None,
                   help="system the geometric-mean speedups are relative to (default: the "
                   "system with results on the most benchmarks)")
    p.add_argument("--systems", default="",
                   help="comma-separated systems for the performance profiles (default: all)")
    p.add_argument("--no-plots", action="store_true", help="write tables only")
    p.add_argument("--html", action="store_true",
                   help="also write report.html: the tables and every plot in one "
                   "self-contained page")
    return p


def _check(trees: list[ResultsTree], out: pathlib.Path) -> None:
    cache = ComplianceCache(out / ".compliance_cache.json")
    for tree in trees:
        check_runs(tree.all_runs(), cache)
        rescore(tree)


def _profile_section(
    trees: list[ResultsTree], args: argparse.Namespace, out: pathlib.Path, written: list
) -> str:
    systems = [s for s in args.systems.split(",") if s]
    results = [r for t in trees for r in t.results]
    matrix = profiles.time_matrix(results, per_chip=args.per_chip, systems=systems)
    if len(matrix) < 2:
        return ""
    prof = profiles.performance_profiles(matrix)
    baseline = args.baseline or profiles.default_baseline(matrix)
    if baseline not in matrix:
        raise UsageError(
            f"--baseline={baseline!r} has no valid result here. Pick one of: "
            f"{', '.join(sorted(matrix))}."
        )
    if not args.no_plots:
        unit = "chip-minutes" if args.per_chip else "minutes"
        written.append(plots.plot_profiles(prof.taus, prof.rho, out / "profiles.png",
                                           f"Performance profiles ({unit})"))
    return "\n## Performance profiles (AlgoPerf-style lens)\n\n" + profiles.profiles_markdown(
        matrix, prof, baseline, args.per_chip
    ) + "\n"


def _plots(tree: ResultsTree, trees: list[ResultsTree], out: pathlib.Path) -> list:
    written = []
    groups = tables.by_benchmark(tree.results)
    for benchmark, group in groups.items():
        written.append(plots.plot_quality_curves(
            group, out / f"quality_{benchmark}.png", f"{benchmark}: quality vs time, every run"))
    # Time to target compares systems: valid results only (never an incomplete one).
    everything = tables.by_benchmark([r for t in trees for r in t.results if r.valid])
    if everything:
        written.append(plots.plot_time_to_target(everything, out / "time_to_target.png"))
        if any(r.chips for rs in everything.values() for r in rs):
            written.append(plots.plot_time_to_target(everything, out / "chip_minutes.png",
                                                     per_chip=True))
    if tree.mini_runs:
        written.append(plots.plot_mini_curves(tree.mini_runs, out / "quality_mini.png"))
    return written + _train_curves(workdir_runs(tree), out)


def workdir_runs(tree: ResultsTree) -> list:
    """The tree's runs that come from run workdirs (summary.json), MLPerf and mini."""
    return [r for r in tree.all_runs() if r.workdir_run]


def _train_curves(runs: list, out: pathlib.Path) -> list[pathlib.Path]:
    """Per workload with metrics.jsonl: curves_<workload>.png (quality, loss, examples/s
    against time) and curves_<workload>.csv (the loss/throughput points plotted)."""
    written = []
    for workload in sorted({r.benchmark for r in runs if r.metrics_path}):
        group = sorted((r for r in runs if r.benchmark == workload),
                       key=lambda r: (r.config, r.path))
        names = runs_lib.unique_names(group)
        points = {n: curves.train_curve(r) for n, r in zip(names, group, strict=True)}
        written.append(plots.plot_train_curves(
            group, points, names, out / f"curves_{workload}.png",
            f"{workload}: quality, training loss and examples/s vs time, every run workdir"))
        written.append(curves.write_csv(points, out / f"curves_{workload}.csv"))
    return written


def main(argv: list[str]) -> int:
    """Run `tpubench report` with the arguments that follow it; returns the exit status."""
    args = build_parser().parse_args(argv)
    out = pathlib.Path(args.out)
    mine = load_tree(args.results_dir)
    published = [load_tree(d) for d in args.compare]
    trees = [mine, *published]
    if not args.no_compliance:
        _check(trees, out)
    out.mkdir(parents=True, exist_ok=True)

    written: list[pathlib.Path] = []
    report = tables.markdown_report(
        mine.results, mine.mini_runs, f"MLPerf Training v0.7 results: {mine.label}",
        show_source=len({r.source for r in mine.results}) > 1,
        open_results=mine.open_results, not_scored=mine.not_scored,
        workdir_runs=workdir_runs(mine),
    )
    if published:
        report += "\n" + compare.comparison_markdown(mine, published, per_chip=args.per_chip)
    report += _profile_section(trees if published else [mine], args, out, written)
    if not args.no_plots:
        written = _plots(mine, trees, out) + written

    data = tables.json_report(mine.results, mine.mini_runs, mine.open_results, mine.not_scored)
    if published:
        data["comparison"] = compare.comparison_rows(mine, published, per_chip=args.per_chip)
    (out / "report.md").write_text(report)
    (out / "report.json").write_text(json.dumps(data, indent=1))
    if args.html:
        from tpubench.report import html

        written.append(html.write(out, report, [p for p in written if p.suffix == ".png"],
                                  f"MLPerf Training v0.7 results: {mine.label}"))
    sys.stdout.write(report)
    sys.stdout.write(f"\nWrote {out / 'report.md'}, {out / 'report.json'}")
    sys.stdout.write("".join(f"\nWrote {p}" for p in written) + "\n")
    return 0


if __name__ == "__main__":  # python -m tpubench.report.cli RESULTS_DIR
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
