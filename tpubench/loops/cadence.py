"""Where evals fall and how the steps between them are dispatched, and MLPerf epoch numbers.

MLPerf v0.7 training rules, "Quality measure": the quality is evaluated at a fixed frequency in
training samples ("Every 4 epochs" for ResNet, "Starting at 3M samples, then every 500K samples"
for BERT, ...). Eval j therefore runs after the first step at or after sample point
`eval_offset_samples + j * eval_every_samples` (j = 1, 2, ...): eval steps are computed from the
sample points, never by repeating a rounded step interval, so they do not drift. A workload whose
reference evaluates at listed points instead (SSD v0.7: epochs 40, 50, 55, ..., 80) sets
`eval.sample_points` to those sample counts; offset and every are then unused.

Between evals the harness dispatches blocks of K = `steps_per_dispatch` steps; where the interval
is not a multiple of K, the remainder r < K runs as one r-step block (an executable per distinct
remainder the schedule needs, all compiled before the clock starts).

Rule "Epoch numbering": epochs are numbered from 1. A block that starts after `s` samples starts
in epoch `1 + s / train_samples`; an eval after `s` samples is logged at `epoch_num = s /
train_samples` (the number of epochs trained, i.e. the number of the last epoch it covers).
"""

from __future__ import annotations

import bisect
import dataclasses
import math

import ml_collections

from tpubench.errors import UsageError


@dataclasses.dataclass(frozen=True)
class Cadence:
    """The eval steps of a run (the last one is the budget) and the dispatch size K."""

    steps_per_dispatch: int
    eval_steps: tuple[int, ...]

    @classmethod
    def from_config(cls, config: ml_collections.ConfigDict, train_samples: int) -> Cadence:
        """Eval points every `eval_every_samples` (default: one epoch) after
        `eval_offset_samples`, up to and including the first point at or past the budget
        `max_train_samples` (default: 100 epochs)."""
        gbs = int(config.data.global_batch_size)
        points = tuple(int(p) for p in config.eval.get("sample_points", ()) or ())
        if points:
            return cls(max(1, int(config.run.steps_per_dispatch)),
                       listed_eval_steps(points, int(config.run.max_train_samples or 0), gbs))
        every = int(config.eval.every_samples or train_samples)
        offset = int(config.eval.offset_samples)
        if every <= 0:
            raise UsageError(
                "Set eval_every_samples (or the workload's train_samples) to a positive number "
                "of samples, e.g. --config.eval.every_samples=50000."
            )
        budget = int(config.run.max_train_samples or 100 * max(train_samples, gbs))
        n_evals = max(1, math.ceil((budget - offset) / every))
        steps = tuple(math.ceil((offset + j * every) / gbs) for j in range(1, n_evals + 1))
        return cls(max(1, int(config.run.steps_per_dispatch)), steps)

    @property
    def max_steps(self) -> int:
        """The step of the last eval: reaching it without the target is `aborted`."""
        return self.eval_steps[-1]

    def next_eval(self, step: int) -> int:
        """The first eval step strictly after `step` (the budget if none is left)."""
        i = bisect.bisect_right(self.eval_steps, step)
        return self.eval_steps[min(i, len(self.eval_steps) - 1)]

    def dispatches(self, step: int, stop: int) -> list[int]:
        """Sizes of the dispatches that take the run from `step` to `stop`: K-step blocks, then
        one block of the remainder."""
        q, r = divmod(stop - step, self.steps_per_dispatch)
        return [self.steps_per_dispatch] * q + ([r] if r else [])

    def remainder_sizes(self, start_step: int) -> tuple[int, ...]:
        """The block sizes other than K that a run starting at `start_step` dispatches (each
        needs its own executable, compiled before run_start)."""
        sizes, step = set(), start_step
        for stop in self.eval_steps:
            if stop > step:
                sizes.update(n for n in self.dispatches(step, stop)
                             if n != self.steps_per_dispatch)
                step = stop
        return tuple(sorted(sizes))


def listed_eval_steps(points: tuple[int, ...], budget: int, gbs: int) -> tuple[int, ...]:
    """Eval steps at listed sample points (strictly increasing, positive): each point's first
    step at or after it, up to and including the first point at or past `budget` (0: all)."""
    rising = all(a < b for a, b in zip(points[:-1], points[1:], strict=True))
    if not rising or any(p <= 0 for p in points):
        raise UsageError(f"eval.sample_points must be positive and strictly increasing sample "
                         f"counts, e.g. (4000, 8000, 10000); got {points}.")
    if budget:
        past = [i for i, p in enumerate(points) if p >= budget]
        points = points[: past[0] + 1] if past else points
    steps = tuple(math.ceil(p / gbs) for p in points)
    if len(set(steps)) != len(steps):
        raise UsageError(f"eval.sample_points {points} put two evals on one step at global "
                         f"batch {gbs}: space the points at least one batch apart.")
    return steps


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 4)


def block_first_epoch(samples: int, train_samples: int) -> float | int:
    """`first_epoch_num` of a block that starts after `samples` samples (epochs count from 1)."""
    return _number(1 + samples / max(1, train_samples))


def epochs_trained(samples: int, train_samples: int) -> float | int:
    """`epoch_num` of an eval after `samples` samples, and a block's `epoch_count`."""
    return _number(samples / max(1, train_samples))
