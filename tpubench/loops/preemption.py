"""SIGTERM or SIGINT (Ctrl-C) at any moment of a run: nothing is lost, and the rerun of the same
command resumes.

Preemptible TPU VMs (and most schedulers) send SIGTERM before they stop a machine; a person at a
terminal presses Ctrl-C. Both signals are handled alike. The entry points call `install()` as
their first statement, before JAX, absl or the config are imported (`tpubench.cli`, every
`workloads/<name>/main.py`; this module and the packages above it import only the standard
library), so there is no window in which either signal kills the process or prints a traceback.
What happens then depends on the phase of the run:

    init     (imports, parsing, mesh, compile, restore; and every other subcommand): raise
             `PreemptedBeforeRun` at once, a `BaseException` like `KeyboardInterrupt`, so no
             library's `except Exception` turns it into a warning (JAX's compilation cache did).
             There is nothing to save. `tpubench run` and the workload mains print one line and
             exit 0 (the rerun starts over); the other subcommands print one line and exit 128+N
             (130 for SIGINT, 143 for SIGTERM), the shell's status for a command a signal ended.
    run      (run_start .. run_stop): set a flag. The loop polls it between dispatches, saves a
             checkpoint after the dispatch in flight, logs `tpubench_preempted`, says "rerun to
             resume" and exits 0. Another signal meanwhile only prints that the save is coming.
    finish   (after run_stop, or once the preemption save started: checkpoint, summary): ignored
             (one line on stderr), so the final save and the summary always complete. Orbax
             writes a checkpoint to a temporary directory and renames it when complete, so even
             SIGKILL mid-save leaves no checkpoint the rerun would try to restore.

With several processes, JAX's own preemption service (`jax.distributed`) owns SIGTERM and agrees
on a common step through `multihost_utils.reached_preemption_sync_point`: `Flag.reached` asks it.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, NoReturn

INIT, RUN, FINISH = "init", "run", "finish"


SIGNALS = (signal.SIGTERM, signal.SIGINT)


class PreemptedBeforeRun(BaseException):  # noqa: N818 (the name the loops and tests know)
    """SIGTERM or SIGINT arrived before run_start: nothing to save; rerunning starts over.

    A `BaseException`, as `KeyboardInterrupt` is: a library's `except Exception` (JAX's
    compilation cache reads and writes, orbax) must not swallow it or turn it into a warning."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        self.signum = int(signum)
        super().__init__(f"{signal_name(signum)} before run_start: nothing was trained, so "
                         "nothing was saved. Rerun the same command to start the run over.")

    @property
    def exit_status(self) -> int:
        """The shell's status for a command ended by this signal: 128+N (130 for SIGINT)."""
        return 128 + self.signum


def signal_name(signum: int) -> str:
    """"SIGTERM", "SIGINT" (the name a person reads)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class _State:
    def __init__(self) -> None:
        self.phase = INIT
        self.event = threading.Event()
        self.signum = signal.SIGTERM  # the first signal of this run
        self.local = True  # False in a run of several processes (`Flag`)
        self.redelivered = False  # the handler's next call is `_redeliver`'s, not a new signal


_STATE = _State()


def _say(line: str) -> None:
    """One line on stderr from a signal handler: os.write, since a print into a buffered
    stream the interrupted code was writing to can raise "reentrant call"."""
    try:
        os.write(2, f"tpubench: {line}\n".encode())
    except OSError:
        pass


_IMPORT_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
_REDELIVER_S = 0.05


def _in_import(frame: Any) -> bool:
    """Whether `frame` runs inside an `import` (a module body, a C extension's init)."""
    while frame is not None:
        if frame.f_code.co_filename in _IMPORT_FILES:
            return True
        frame = frame.f_back
    return False


def _redeliver(signum: int) -> None:
    if _STATE.phase == INIT:
        _STATE.redelivered = True
        _thread.interrupt_main(signum)  # the handler runs again in the main thread


def _handle(signum: int, frame: Any) -> None:
    again = _STATE.event.is_set() and not _STATE.redelivered
    _STATE.redelivered = False
    if not _STATE.event.is_set():
        _STATE.signum = signum
    _STATE.event.set()
    if _STATE.phase == INIT:
        if _in_import(frame):
            # Never raise inside an import: raised in a C extension's init, the exception is printed
            # with a traceback (numpy's import_array) or turned into an ImportError (jaxlib).
            # Deliver the signal again once the import is done (at most the import's time).
            timer = threading.Timer(_REDELIVER_S, _redeliver, (signum,))
            timer.daemon = True
            timer.start()
            return
        raise PreemptedBeforeRun(_STATE.signum)
    if _STATE.phase == RUN and not _STATE.local and signum == signal.SIGINT:
        _say(f"{signal_name(signum)} received: with several processes only SIGTERM stops the "
             "run (JAX's preemption service agrees on the step to save at): send SIGTERM to "
             "every process.")
    elif _STATE.phase == RUN and not again:
        _say(f"{signal_name(signum)} received: the run stops after the dispatch in flight and "
             "saves a checkpoint; rerun the same command to resume.")
    else:
        # The save (after the dispatch in flight) or the final checkpoint and summary are
        # under way; stopping them half-way is what this module exists to prevent.
        _say(f"{signal_name(signum)} received: saving; the run ends by itself in a moment "
             "(the previous checkpoint stays usable meanwhile).")


def check_before_run() -> None:
    """Raise `PreemptedBeforeRun` if a signal came during init. The handler raises at once, but
    Python drops an exception raised while a finaliser or GC callback runs (seen with JAX's),
    so the loop asks again before run_start."""
    if _STATE.event.is_set():
        raise PreemptedBeforeRun(_STATE.signum)


def reset() -> None:
    """Forget an earlier signal (a new run in the same process, e.g. a notebook)."""
    _STATE.event.clear()


_previous_unraisable = sys.unraisablehook


def _quiet_unraisable(unraisable: Any) -> None:
    """Python reports an exception raised inside a finaliser or GC callback as "Exception
    ignored ... Traceback" on stderr. A `PreemptedBeforeRun` dropped that way is not an error:
    the flag is set and `check_before_run` raises it again before run_start."""
    if isinstance(unraisable.exc_value, PreemptedBeforeRun):
        return
    _previous_unraisable(unraisable)


def end_process(line: str, status: int) -> NoReturn:
    """Print `line` on stderr and end the process with `status` at once. A signal during init
    can land while XLA compiles on other threads, and interpreter shutdown under them crashed
    (exit 139); the loops close everything a rerun reads (log, writers) before this point."""
    print(f"tpubench: {line}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


@contextlib.contextmanager
def ends_cleanly() -> Iterator[None]:
    """`install()`, then run the block; a signal before run_start ends the process with one
    line and status 0 (the rerun starts over), never a traceback. The workload mains wrap their
    imports and `tpubench.entry.run` in it, so the imports of absl and JAX are covered."""
    install()
    try:
        yield
    except BaseException as e:
        interrupt = as_interrupt(e)
        if interrupt is None:
            raise
        end_process(str(interrupt), 0)


def as_interrupt(e: BaseException) -> PreemptedBeforeRun | None:
    """The interruption `e` is, or stands for, else None. A signal during init can surface as
    another exception: raised inside a C extension's initialisation (jaxlib's), it comes out
    as "ImportError: Encountered an error while initializing the extension"; so any exception
    while a signal is pending in init is that signal's. `KeyboardInterrupt` means something
    replaced this module's handler. Raised inside C++ (jaxlib's pytree equality), it comes out
    as another exception whose cause is the interruption; the chain is searched, since the run's
    `close()` on the way out forgets the pending signal."""
    seen: set[int] = set()
    link: BaseException | None = e
    while link is not None and id(link) not in seen:
        if isinstance(link, PreemptedBeforeRun):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    if isinstance(e, KeyboardInterrupt):
        return PreemptedBeforeRun(signal.SIGINT)
    if _STATE.phase == INIT and _STATE.event.is_set() and not isinstance(e, SystemExit):
        return PreemptedBeforeRun(_STATE.signum)
    return None


def install() -> None:
    """Route SIGTERM and SIGINT through this module from now on (main thread only;
    idempotent)."""
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, _handle)
        global _previous_unraisable
        if sys.unraisablehook is not _quiet_unraisable:
            _previous_unraisable = sys.unraisablehook
            sys.unraisablehook = _quiet_unraisable


def installed() -> bool:
    """Whether this module's handler is SIGTERM's and SIGINT's handler right now (something
    else, e.g. a launcher that forwards signals, may have replaced it since `install()`)."""
    return all(signal.getsignal(signum) is _handle for signum in SIGNALS)


def set_phase(phase: str) -> None:
    """Enter `init`, `run` or `finish` (the train loop calls this)."""
    _STATE.phase = phase


class Flag:
    """Whether the run should save and stop, polled between dispatches.

    Installs the handler for the duration of a run when the entry point has not (library use,
    e.g. a notebook, where Ctrl-C then saves and stops the run) and restores the previous
    handlers afterwards.
    """

    def __init__(self, process_count: int) -> None:
        self._process_count = process_count
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Flag:
        _STATE.local = self._process_count == 1
        if self._process_count == 1 and threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                if signal.getsignal(signum) is not _handle:
                    self._previous[signum] = signal.signal(signum, _handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}

    def reached(self, dispatch: int) -> bool:
        """Whether to save and stop after dispatch number `dispatch` (counts up by one from the
        same value on every process). Several processes: JAX's preemption sync point, a local
        check (no collective in the train loop) that turns true on the same dispatch
        everywhere."""
        if self._process_count == 1:
            return _STATE.event.is_set()
        from jax.experimental import multihost_utils

        return multihost_utils.reached_preemption_sync_point(dispatch)
