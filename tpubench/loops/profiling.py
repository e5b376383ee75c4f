"""`--config.run.profile_steps=N`: a `jax.profiler` trace of N train steps into `<workdir>/profile`
(open it with TensorBoard's profile plugin or xprof).

The trace starts before the run's second dispatch (the first one, the warm-up, pays for first-run
allocations) and stops once N steps have been dispatched and finished (whole dispatches, so it may
cover a few more; evals that fall in between are traced too). It runs on the clock, so a profiled
run is open division (`tpubench.division`: `profile_steps`). Process 0 only.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import jax

PROFILE_DIR = "profile"


class StepProfiler:
    """Starts and stops one trace around dispatches; a no-op when `steps` is 0."""

    def __init__(self, workdir: str | os.PathLike, steps: int, enabled: bool = True):
        self.path = pathlib.Path(workdir) / PROFILE_DIR
        self.steps = int(steps) if enabled else 0
        self._active = False
        self._traced = 0
        self._dispatches = 0

    @property
    def requested(self) -> bool:
        return self.steps > 0

    def before_dispatch(self) -> None:
        """Call before each dispatch: starts the trace before the second one."""
        if self.steps and not self._active and self._traced == 0 and self._dispatches == 1:
            jax.profiler.start_trace(os.fspath(self.path))
            self._active = True
        self._dispatches += 1

    def after_dispatch(self, size: int, outputs: Any) -> None:
        """Call after each dispatch of `size` steps: stops once N steps are traced (waiting for
        `outputs` first, so the trace holds the device work, not only the dispatch)."""
        if self._active:
            self._traced += size
            if self._traced >= self.steps:
                self.stop(outputs)

    def stop(self, outputs: Any = None) -> None:
        """Stop the trace if it is running (also at the end of a run shorter than N steps)."""
        if self._active:
            jax.block_until_ready(outputs)
            jax.profiler.stop_trace()
            self._active = False

    def files(self) -> str | None:
        """The trace directory for summary.json, None when nothing was traced."""
        return str(self.path) if self._traced else None
