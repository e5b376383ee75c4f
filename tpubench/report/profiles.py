"""An AlgoPerf-style second lens: performance profiles and geometric-mean speedups.

For systems s and benchmarks b with time t[s][b] (minutes, or chip-minutes), the performance
ratio is r[s][b] = t[s][b] / min_s' t[s'][b] (infinite where s has no valid result on b), and
the profile of s is rho_s(tau) = fraction of benchmarks with r[s][b] <= tau. rho_s(1) is the
fraction of benchmarks s wins; a curve that rises sooner is better. The AlgoPerf benchmark
score is the area under rho_s over [1, tau_max] divided by (tau_max - 1) (AlgoPerf uses
tau_max = 4). The geometric-mean speedup of s over a baseline is exp(mean over the benchmarks
both ran of log(t[baseline][b] / t[s][b])).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

from tpubench.report.scoring import BenchmarkResult

ALGOPERF_TAU_MAX = 4.0
Matrix = dict[str, dict[str, float]]


def system_label(result: BenchmarkResult, with_source: bool) -> str:
    """How a system is named in profiles: 'source/system' when several trees are compared."""
    return f"{result.source}/{result.system}" if with_source else result.system


def time_matrix(
    results: Iterable[BenchmarkResult], per_chip: bool = False,
    systems: Sequence[str] | None = None,
) -> Matrix:
    """system -> benchmark -> time (minutes, or chip-minutes), valid results only.

    A result with fewer runs than the rules require, an invalid one, or an open-division one
    never enters the matrix (`BenchmarkResult.valid`).
    """
    results = list(results)
    with_source = len({r.source for r in results}) > 1
    matrix: Matrix = {}
    for r in results:
        value = r.chip_minutes if per_chip else r.minutes
        label = system_label(r, with_source)
        if not r.valid or value is None or (
            systems and label not in systems and r.system not in systems
        ):
            continue
        matrix.setdefault(label, {})[r.benchmark] = value
    return matrix


@dataclasses.dataclass(frozen=True)
class PerformanceProfiles:
    """Profiles of every system over `benchmarks`, sampled at `taus`."""

    benchmarks: tuple[str, ...]
    ratios: dict[str, dict[str, float]]
    taus: tuple[float, ...]
    rho: dict[str, tuple[float, ...]]

    def fraction_within(self, system: str, tau: float) -> float:
        """rho_system(tau), computed exactly (not from the sampled grid)."""
        r = self.ratios[system]
        return sum(r[b] <= tau for b in self.benchmarks) / len(self.benchmarks)

    def algoperf_score(self, system: str, tau_max: float = ALGOPERF_TAU_MAX) -> float:
        """Area under rho over [1, tau_max] / (tau_max - 1): 1.0 = best on every benchmark."""
        total = 0.0
        for b in self.benchmarks:
            ratio = self.ratios[system][b]
            if ratio <= tau_max:  # within tau for tau in [ratio, tau_max]
                total += (tau_max - max(ratio, 1.0)) / (tau_max - 1.0)
        return total / len(self.benchmarks)


def performance_profiles(matrix: Matrix, num_taus: int = 200) -> PerformanceProfiles:
    """Profiles over every benchmark that at least one system in `matrix` has a time for."""
    benchmarks = tuple(sorted({b for row in matrix.values() for b in row}))
    if not benchmarks:
        raise ValueError("no valid results to profile")
    best = {b: min(row[b] for row in matrix.values() if b in row) for b in benchmarks}
    ratios = {
        s: {b: (row[b] / best[b] if b in row else math.inf) for b in benchmarks}
        for s, row in matrix.items()
    }
    finite = [v for r in ratios.values() for v in r.values() if math.isfinite(v)]
    tau_top = max(ALGOPERF_TAU_MAX, 1.1 * max(finite))
    taus = tuple(math.exp(math.log(tau_top) * i / (num_taus - 1)) for i in range(num_taus))
    rho = {
        s: tuple(sum(r[b] <= t for b in benchmarks) / len(benchmarks) for t in taus)
        for s, r in ratios.items()
    }
    return PerformanceProfiles(benchmarks, ratios, taus, rho)


def geomean_speedup(matrix: Matrix, system: str, baseline: str) -> tuple[float | None, int]:
    """(geometric-mean speedup of `system` over `baseline`, number of shared benchmarks)."""
    shared = sorted(set(matrix.get(system, {})) & set(matrix.get(baseline, {})))
    if not shared:
        return None, 0
    logs = [math.log(matrix[baseline][b] / matrix[system][b]) for b in shared]
    return math.exp(sum(logs) / len(logs)), len(shared)


def default_baseline(matrix: Matrix) -> str:
    """The system with results on the most benchmarks (ties: first by name)."""
    return min(matrix, key=lambda s: (-len(matrix[s]), s))


def profiles_markdown(
    matrix: Matrix, profiles: PerformanceProfiles, baseline: str, per_chip: bool
) -> str:
    """A Markdown table: per system, benchmarks run, wins, AlgoPerf score, speedup vs baseline."""
    unit = "chip-minutes" if per_chip else "minutes"
    lines = [
        f"Times compared in {unit}; baseline for speedups: `{baseline}`. "
        f"AlgoPerf score = area under the profile over tau in [1, {ALGOPERF_TAU_MAX:g}], "
        "normalised (1.0 = best on every benchmark; missing benchmarks count as never within tau).",
        "",
        "| system | benchmarks | best on | within 2x of best | AlgoPerf score | geomean speedup "
        "vs baseline (shared benchmarks) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    order = sorted(matrix, key=lambda s: (-profiles.algoperf_score(s), s))
    n = len(profiles.benchmarks)
    for s in order:
        speedup, shared = geomean_speedup(matrix, s, baseline)
        sp = "-" if speedup is None else f"{speedup:.3g}x ({shared})"
        wins = round(profiles.fraction_within(s, 1.0) * n)
        within2 = round(profiles.fraction_within(s, 2.0) * n)
        lines.append(
            f"| {s} | {len(matrix[s])} | {wins}/{n} | {within2}/{n} | "
            f"{profiles.algoperf_score(s):.3f} | {sp} |"
        )
    return "\n".join(lines)
