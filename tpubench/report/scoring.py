"""MLPerf Training v0.7 scoring: the olympic mean over N runs, and what makes a result invalid.

Rules (v0.7): a run's result is `run_stop - run_start` in minutes; a benchmark result is N runs
(5 for resnet, ssd, maskrcnn, dlrm; 10 for gnmt, transformer, bert, minigo); drop the fastest and
the slowest and average the rest. One run that did not converge counts as the slowest (so only
the fastest converged run is dropped besides it); two or more make the result invalid.

Fewer runs than required: the olympic mean is still computed (as mlperf_logging's result
summarizer does, so the number can be checked), but the result is not valid: it is marked
INCOMPLETE and left out of comparisons and performance profiles. More runs than required: the
result is flagged; the olympic mean drops the fastest and the slowest of ALL the runs and
averages the rest (the summarizer's `_compute_olympic_average(scores, dropped, 1)`), so extra
runs are averaged in, never discarded.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

from tpubench.mlperf import rules
from tpubench.report.logs import Run
from tpubench.report.targets import required_runs

MAX_NOT_CONVERGED = rules.MAX_NOT_CONVERGED


@dataclasses.dataclass(frozen=True)
class OlympicScore:
    """The score (None when invalid or nothing is left after dropping) and why."""

    minutes: float | None
    used: tuple[float, ...]
    reason: str = ""


def olympic_mean(converged_minutes: list[float], not_converged: int) -> OlympicScore:
    """Olympic mean of converged run times, `not_converged` runs counting as the slowest.

    With no non-converged run, drop the fastest and the slowest converged run; with one, that
    run is the slowest, so drop only the fastest converged run; with two or more, invalid.
    """
    if not_converged > MAX_NOT_CONVERGED:
        return OlympicScore(
            None, (),
            f"INVALID: {not_converged} runs did not converge (at most {MAX_NOT_CONVERGED} may)",
        )
    ordered = sorted(converged_minutes)
    used = tuple(ordered[1 : len(ordered) - (1 - not_converged)])
    if not used:
        reason = f"INVALID: {len(ordered)} converged runs leave none to average"
        return OlympicScore(None, (), reason)
    return OlympicScore(sum(used) / len(used), used)


@dataclasses.dataclass
class BenchmarkResult:
    """One system's result on one benchmark: its runs, score and verdicts."""

    system: str
    benchmark: str
    runs: list[Run]
    chips: int | None = None
    framework: str = ""
    source: str = ""  # which results tree ("Google", "mine", ...)
    score: OlympicScore | None = None
    division: str = "closed"  # "open" results are reported apart, never compared

    @property
    def required(self) -> int | None:
        """Runs the rules require for this benchmark."""
        return required_runs(self.benchmark)

    @property
    def minutes(self) -> float | None:
        """The olympic-mean score in minutes (None when invalid)."""
        return self.score.minutes if self.score else None

    @property
    def chip_minutes(self) -> float | None:
        """Score x chips: the per-chip figure (lower is better); None without a chip count."""
        if self.minutes is None or not self.chips:
            return None
        return self.minutes * self.chips

    @property
    def not_counted(self) -> list[Run]:
        """Runs that count as non-converged (aborted, off target, or failing compliance)."""
        return [r for r in self.runs if not r.counted]

    @property
    def complete(self) -> bool:
        """At least as many runs as the rules require (True when the benchmark is unknown)."""
        return len(self.runs) >= (self.required or 0)

    @property
    def extra_runs(self) -> int:
        """Runs beyond the required number (0 when not more)."""
        return max(0, len(self.runs) - self.required) if self.required else 0

    @property
    def resumed_runs(self) -> list[Run]:
        """Runs that took more than one attempt."""
        return [r for r in self.runs if r.resumed]

    @property
    def valid(self) -> bool:
        """A valid closed-division MLPerf result: a score, and the runs the rules require.

        Only valid results enter comparisons and performance profiles.
        """
        return self.minutes is not None and self.complete and self.division != "open"

    def runs_cell(self) -> str:
        """'5/5', '3/5 INCOMPLETE' or '7/5 (2 extra)'."""
        if not self.required:
            return str(len(self.runs))
        text = f"{len(self.runs)}/{self.required}"
        if not self.complete:
            return text + " INCOMPLETE"
        return text + (f" ({self.extra_runs} extra)" if self.extra_runs else "")

    def score_cell(self) -> str:
        """The score in minutes for a table; an incomplete result's score is marked as such."""
        if self.minutes is None:
            return "-"
        return f"{self.minutes:.3f}" + ("" if self.complete else " (incomplete, not valid)")

    def verdict(self) -> str:
        """The result's status in words: 'valid', or what makes it invalid/incomplete."""
        if self.score is not None and self.score.reason:
            return self.score.reason
        notes = ["open division (reported apart)"] if self.division == "open" else []
        if self.required and not self.complete:
            notes.append(
                f"INCOMPLETE: {len(self.runs)} of {self.required} runs, not a valid result "
                "(left out of comparisons and profiles)")
        if self.extra_runs:
            notes.append(
                f"{self.extra_runs} more runs than the {self.required} required: the olympic "
                f"mean drops the fastest and slowest of all {len(self.runs)} (as mlperf_logging's "
                "result summarizer does)")
        dropped = self.not_counted
        if dropped:
            r = dropped[0]
            notes.append(f"1 run not converged ({_run_name(r)}: {r.why_not_counted()})")
        return "; ".join(notes) if notes else "valid"

    def compliance_summary(self) -> str:
        """'10/10 pass', '4/5 pass (result_0: ...)' or 'not checked'."""
        checked = [r for r in self.runs if r.compliance is not None]
        if not checked:
            return "not checked"
        passed = sum(r.compliance.valid for r in checked)
        text = f"{passed}/{len(checked)} pass"
        failed = [_run_name(r) for r in checked if not r.compliance.valid]
        return text + (f" (fail: {', '.join(failed)})" if failed else "")

    def resumed_summary(self) -> str:
        """'-' or 'result_2: 3 attempts, ...' for the runs that were preempted and resumed."""
        resumed = self.resumed_runs
        if not resumed:
            return "-"
        return ", ".join(f"{_run_name(r)}: {r.attempts} attempts" for r in resumed)

    def quality_summary(self) -> str:
        """How many runs reached the target, and the lowest final quality among those that did."""
        reached = [r for r in self.runs if r.reached_target]
        finals = [r.final_quality for r in reached if r.final_quality is not None]
        text = f"{len(reached)}/{len(self.runs)} reached"
        if finals:
            text += f" (min {min(finals):.4g})"
        return text


def _run_name(run: Run) -> str:
    name = run.path.rstrip("/").rsplit("/", 1)[-1]
    return name.removesuffix(".txt")


def score_runs(result: BenchmarkResult) -> BenchmarkResult:
    """Fill `result.score` from its runs by the v0.7 rules (in place; also returned)."""
    counted = [r.minutes for r in result.runs if r.counted]
    result.score = olympic_mean(counted, len(result.runs) - len(counted))
    return result


def mini_summary(runs: list[Run]) -> dict:
    """What a group of mini/smoke runs says (never an MLPerf score): successes, median time,
    the best final quality among the finite ones (a NaN run never hides another run's value:
    max() over a list holding NaN depends on its order) and how many runs aborted or ended NaN."""
    times = [r.minutes for r in runs if r.converged and r.minutes is not None]
    finals = [r.final_quality for r in runs if r.final_quality is not None]
    finite = [q for q in finals if math.isfinite(q)]
    lower_is_better = bool(runs and runs[0].target and not runs[0].target.higher_is_better)
    best = (min if lower_is_better else max)(finite) if finite else None
    return {
        "runs": len(runs),
        "reached_target": sum(bool(r.reached_target) for r in runs),
        "median_time_to_target_s": statistics.median(times) * 60.0 if times else None,
        "best_final_quality": best,
        "target": runs[0].target.describe() if runs and runs[0].target else "",
        "aborted_runs": sum(r.status == "aborted" for r in runs),
        "nan_runs": len(finals) - len(finite),
    }
