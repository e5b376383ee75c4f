"""MLPerf Training v0.7 scoring: the olympic mean over N runs, and what makes a result invalid.

Rules (v0.7): a run's result is `run_stop - run_start` in minutes; a benchmark result is N runs
(5 for resnet, ssd, maskrcnn, dlrm; 10 for gnmt, transformer, bert, minigo); drop the fastest and
the slowest and average the rest. One run that did not converge counts as the slowest (so only
the fastest converged run is dropped besides it); two or more make the result invalid.
"""

from __future__ import annotations

import dataclasses
import statistics

from tpubench.report.logs import Run
from tpubench.report.targets import required_runs

MAX_NOT_CONVERGED = 1


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
    def valid(self) -> bool:
        """A valid MLPerf result: a score, and at least as many runs as the rules require."""
        return self.minutes is not None and len(self.runs) >= (self.required or 0)

    def verdict(self) -> str:
        """The result's status in words: 'valid', or what makes it invalid/incomplete."""
        if self.score is not None and self.score.reason:
            return self.score.reason
        notes = []
        if self.required and len(self.runs) < self.required:
            notes.append(f"incomplete: {len(self.runs)} of {self.required} runs")
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
    """What a group of mini/smoke runs says (never an MLPerf score): successes, median time."""
    times = [r.minutes for r in runs if r.converged and r.minutes is not None]
    finals = [r.final_quality for r in runs if r.final_quality is not None]
    lower_is_better = bool(runs and runs[0].target and not runs[0].target.higher_is_better)
    best = (min if lower_is_better else max)(finals) if finals else None
    return {
        "runs": len(runs),
        "reached_target": sum(bool(r.reached_target) for r in runs),
        "median_time_to_target_s": statistics.median(times) * 60.0 if times else None,
        "best_final_quality": best,
        "target": runs[0].target.describe() if runs and runs[0].target else "",
    }
