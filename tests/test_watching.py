"""Watching a run from a terminal or a log: the compile heartbeat and the progress reporter
(`tpubench.platform.heartbeat`, `tpubench.loops.reporter`). The progress lines and the init
heartbeat of a real run, and the one-dispatch-late reads, are tested in test_metrics.py and
test_timing.py."""

from __future__ import annotations

import contextlib
import io
import re
import threading
import time

from tpubench.loops.reporter import Reporter, duration
from tpubench.platform.heartbeat import heartbeat


def _beating() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tpubench-heartbeat"]


def test_the_heartbeat_beats_during_a_slow_call_and_stops_after():
    """Bites: a beat thread never started, never stopped (more lines after the block), or
    counting from the wrong start."""
    out = io.StringIO()
    with heartbeat("compiling", every_s=0.1, stream=out):
        time.sleep(0.55)  # a slow fake compile
    during = out.getvalue()
    time.sleep(0.3)
    assert out.getvalue() == during and not _beating()
    lines = during.splitlines()
    assert 3 <= len(lines) <= 6, lines
    assert all(re.fullmatch(r"compiling \.\.\. \d+ s", line) for line in lines), lines
    quick = io.StringIO()
    with heartbeat("compiling", every_s=5, stream=quick):
        pass
    assert quick.getvalue() == "" and not _beating()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _reporter(stream, **kwargs) -> Reporter:
    args = dict(prefix="[w/c]", every_s=0.0, gbs=10, train_samples=1000,
                eval_steps=(100, 200), max_time_s=0.0, run_start_unix=time.time() - 60.0,
                step=0, stream=stream)
    return Reporter(**{**args, **kwargs})


def test_a_line_gives_the_rate_and_both_etas():
    """500 examples in 5 s -> 100 examples/s; 500 to the next eval -> 5 s; 1,500 to the budget
    plus two evals of 10 s -> 35 s; 65 s on the clock. Bites: ETAs from the wrong step, the
    evals left out, or the rate counted from run_start."""
    out = io.StringIO()
    r = _reporter(out)
    r.eval_s_mean = 10.0
    r.block_start(0)
    wall = r._ref[1] + 5.0
    r.run_start_unix = wall - 65.0
    text = r.train_line(50, 1.25, wall, next_eval=100)
    assert text == ("step 50 epoch 0.50: loss 1.2500, 100 examples/s, 1:05 on the clock; "
                    "next eval in ~0:05, budget in ~0:35")
    assert out.getvalue() == f"[w/c] {text}\n"
    # A wall-clock budget ends the run sooner: 70 s on the clock at most -> 5 s left.
    assert _reporter(out, max_time_s=70.0).eta_budget(50, 100.0, 65.0) == 5.0
    assert duration(3725) == "1:02:05" and duration(float("nan")) == "?"


def test_a_terminal_gets_a_bar_and_a_log_plain_lines():
    """Bites: a bar drawn into a pipe (carriage returns in a log), or no bar on a terminal."""
    term = _Terminal()
    r = _reporter(term)
    r.block_start(0)
    r.reached(30)
    r.train_line(50, 1.0, r._ref[1] + 1.0, next_eval=100)
    r.say("[w/c] step 100 epoch 1: quality 0.5")
    r.close()
    shown = term.getvalue()
    assert "\r" in shown and "50/200" in shown and "loss 1.0000" in shown
    assert "[w/c] step 100 epoch 1: quality 0.5\n" in shown
    log = io.StringIO()
    r = _reporter(log)
    r.block_start(0)
    r.reached(30)
    r.train_line(50, 1.0, r._ref[1] + 1.0, next_eval=100)
    r.say("[w/c] step 100 epoch 1: quality 0.5")
    r.close()
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()
    assert log.getvalue().splitlines()[-1] == "[w/c] step 100 epoch 1: quality 0.5"


def test_no_line_is_due_before_the_interval_or_off_process_zero():
    """Bites: `due()` ignoring the interval (a device read at every dispatch)."""
    with contextlib.redirect_stdout(io.StringIO()):
        assert not _reporter(io.StringIO(), every_s=3600.0).due()
        assert _reporter(io.StringIO(), every_s=0.0).due()
        assert not _reporter(io.StringIO(), every_s=0.0, enabled=False).due()
