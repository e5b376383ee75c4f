"""SIGTERM at any moment of a run: nothing is lost, and the rerun of the same command resumes.

Preemptible TPU VMs (and most schedulers) send SIGTERM before they stop a machine. The entry
points call `install()` when the process starts, before JAX is imported, so there is no window in
which SIGTERM kills the process. What happens then depends on the phase of the run:

    init     (before run_start: mesh, compile, restore): raise `PreemptedBeforeRun` at once. There
             is nothing to save; the entry point exits 0 and the rerun starts over.
    run      (run_start .. run_stop): set a flag. The loop polls it between dispatches, saves a
             checkpoint after the dispatch in flight, logs `tpubench_preempted` and exits 0.
    finish   (after run_stop: final checkpoint, summary): ignored, so the final save and the
             summary always complete. Orbax writes a checkpoint to a temporary directory and
             renames it when complete, so even SIGKILL mid-save leaves no checkpoint the rerun
             would try to restore.

With several processes, JAX's own preemption service (`jax.distributed`) owns SIGTERM and agrees
on a common step through `multihost_utils.reached_preemption_sync_point`: `Flag.reached` asks it.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

INIT, RUN, FINISH = "init", "run", "finish"


class PreemptedBeforeRun(Exception):
    """SIGTERM arrived before run_start: nothing to save; rerunning starts over."""


class _State:
    def __init__(self) -> None:
        self.phase = INIT
        self.event = threading.Event()


_STATE = _State()


_BEFORE_RUN = ("SIGTERM before run_start: nothing was trained, so nothing was saved. Rerun the "
               "same command to start the run over.")


def _handle(signum: int, frame: Any) -> None:
    _STATE.event.set()
    if _STATE.phase == INIT:
        raise PreemptedBeforeRun(_BEFORE_RUN)


def check_before_run() -> None:
    """Raise `PreemptedBeforeRun` if SIGTERM came during init. The handler raises at once, but
    Python drops an exception raised while a finaliser or GC callback runs (seen with JAX's),
    so the loop asks again before run_start."""
    if _STATE.event.is_set():
        raise PreemptedBeforeRun(_BEFORE_RUN)


def reset() -> None:
    """Forget an earlier SIGTERM (a new run in the same process, e.g. a notebook)."""
    _STATE.event.clear()


_previous_unraisable = sys.unraisablehook


def _quiet_unraisable(unraisable: Any) -> None:
    """Python reports an exception raised inside a finaliser or GC callback as "Exception
    ignored ... Traceback" on stderr. A `PreemptedBeforeRun` dropped that way is not an error:
    the flag is set and `check_before_run` raises it again before run_start."""
    if isinstance(unraisable.exc_value, PreemptedBeforeRun):
        return
    _previous_unraisable(unraisable)


def install() -> None:
    """Route SIGTERM through this module from now on (main thread only; idempotent)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _handle)
        global _previous_unraisable
        if sys.unraisablehook is not _quiet_unraisable:
            _previous_unraisable = sys.unraisablehook
            sys.unraisablehook = _quiet_unraisable


def installed() -> bool:
    """Whether this module's handler is SIGTERM's handler right now (something else, e.g. a
    launcher that forwards signals, may have replaced it since `install()`)."""
    return signal.getsignal(signal.SIGTERM) is _handle


def set_phase(phase: str) -> None:
    """Enter `init`, `run` or `finish` (the train loop calls this)."""
    _STATE.phase = phase


class Flag:
    """Whether the run should save and stop, polled between dispatches.

    Installs the handler for the duration of a run when the entry point has not (library use,
    e.g. a notebook) and restores the previous handler afterwards.
    """

    def __init__(self, process_count: int) -> None:
        self._process_count = process_count
        self._previous: Any = None

    def __enter__(self) -> Flag:
        if self._process_count == 1 and not installed():
            if threading.current_thread() is threading.main_thread():
                self._previous = signal.signal(signal.SIGTERM, _handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None

    def reached(self, dispatch: int) -> bool:
        """Whether to save and stop after dispatch number `dispatch` (counts up by one from the
        same value on every process). Several processes: JAX's preemption sync point, a local
        check (no collective in the train loop) that turns true on the same dispatch
        everywhere."""
        if self._process_count == 1:
            return _STATE.event.is_set()
        from jax.experimental import multihost_utils

        return multihost_utils.reached_preemption_sync_point(dispatch)
