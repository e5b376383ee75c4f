"""Placing a user's results next to published ones (any MLPerf tree, e.g. Google's v0.7).

For each benchmark the user has a result on, every system from every tree is listed, fastest
first, with its ratio to the best published result: in minutes, or, with `per_chip`, in
chip-minutes (score x chips), which puts a 16-chip run and a 4096-chip run on one scale of
cost. Mini runs and open-division results are never compared: they are not closed-division
MLPerf results. A result that is not valid (fewer runs than required, or invalid) is listed
with its verdict but gets no ratio, and never serves as the best published figure.
"""

from __future__ import annotations

from tpubench.report.scoring import BenchmarkResult
from tpubench.report.tables import by_benchmark
from tpubench.report.tree import ResultsTree


def figure(result: BenchmarkResult, per_chip: bool) -> float | None:
    """The compared figure: chip-minutes with `per_chip`, else minutes (None if unknown)."""
    return result.chip_minutes if per_chip else result.minutes


def best_published(published: list[BenchmarkResult], per_chip: bool) -> BenchmarkResult | None:
    """The valid published result with the lowest figure (None when none has one)."""
    scored = [r for r in published if r.valid and figure(r, per_chip) is not None]
    return min(scored, key=lambda r: figure(r, per_chip)) if scored else None


def comparison_rows(
    mine: ResultsTree, published: list[ResultsTree], per_chip: bool = False
) -> dict[str, list[dict]]:
    """benchmark -> rows (mine and published, best first) with each row's ratio to the best
    published figure (>1 = slower/costlier than it)."""
    theirs = [r for tree in published for r in tree.results]
    out: dict[str, list[dict]] = {}
    for benchmark, own in by_benchmark(mine.results).items():
        pub = [r for r in theirs if r.benchmark == benchmark]
        best = best_published(pub, per_chip)
        best_value = figure(best, per_chip) if best else None
        rows = []
        for r, is_mine in [(r, True) for r in own] + [(r, False) for r in pub]:
            value = figure(r, per_chip) if r.valid else None
            rows.append({
                "mine": is_mine, "source": r.source, "system": r.system, "chips": r.chips,
                "minutes": r.minutes, "chip_minutes": r.chip_minutes, "valid": r.valid,
                "verdict": r.verdict(),
                "ratio_to_best_published": (
                    value / best_value if value is not None and best_value else None
                ),
            })
        inf = float("inf")
        rows.sort(key=lambda row: (not row["valid"], row["ratio_to_best_published"] or inf,
                                   not row["mine"]))
        out[benchmark] = rows
    return out


def comparison_markdown(
    mine: ResultsTree, published: list[ResultsTree], per_chip: bool = False
) -> str:
    """Markdown: per benchmark, the user's results among the published ones."""
    unit = "chip-minutes" if per_chip else "minutes"
    sources = ", ".join(t.label for t in published) or "none"
    parts = [f"## Compared with published results ({sources}), by {unit}"]
    for benchmark, rows in comparison_rows(mine, published, per_chip).items():
        parts += ["", f"### {benchmark}", "",
                  "| | source | system | chips | score (min) | chip-min | x best published |"
                  " result |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for row in rows:
            def fmt(v: float | None, d: int = 3) -> str:
                return "-" if v is None else f"{v:.{d}f}"

            flag = "" if row["valid"] else " (not valid)"
            parts.append(
                f"| {'**mine**' if row['mine'] else ''} | {row['source']} | {row['system']} | "
                f"{row['chips'] or '?'} | {fmt(row['minutes'])}{flag} | "
                f"{fmt(row['chip_minutes'], 1)}"
                f" | {fmt(row['ratio_to_best_published'], 2)} | {row['verdict']} |"
            )
    return "\n".join(parts) + "\n"
