"""A run's progress: what the clock, the summary and a resume need besides the train state.

Saved as JSON beside the state in every checkpoint (`tpubench.loops.checkpoint`), so that a resumed
run keeps the first attempt's clock anchor (`run_start_unix`; the clock is never paused), adds to
the accumulated train and eval times, appends to the eval history and counts its attempts.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class Progress:
    """Everything the loop accumulates over a run, across attempts.

    `run_start_unix`: wall time of the first attempt's run_start (None before it).
    `init_s`: the first attempt's untimed init (init_start to init_stop).
    `train_s` / `eval_s`: seconds inside train blocks / evals, summed over attempts.
    `input_start_s`: seconds opening the train dataset (in-memory sources read it then), on the
      clock, summed over attempts (a part of summary.json's `other_s`).
    `history`: one {"elapsed_s", "samples", "quality"} per eval.
    `attempts`: processes that have run this run (1 + resumes).
    `cache_clear`: whether the page cache really was flushed before init (what the log says).
    """

    run_start_unix: float | None = None
    init_s: float = 0.0
    train_s: float = 0.0
    eval_s: float = 0.0
    input_start_s: float = 0.0
    history: list[dict[str, float]] = dataclasses.field(default_factory=list)
    attempts: int = 0
    cache_clear: bool = False

    def to_json(self, step: int) -> dict[str, Any]:
        """The checkpoint's JSON item (`step` is the data position, for a person reading it)."""
        return dict(dataclasses.asdict(self), step=int(step))

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> Progress:
        """Inverse of `to_json`. Also reads the string-keyed dicts of earlier checkpoints (the
        same key names); keys that are not fields (`step`) are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        progress = cls(**{k: v for k, v in saved.items() if k in names})
        progress.history = [dict(h) for h in progress.history]
        return progress
