"""What a person watching a run sees between evals: a progress line every `run.progress_every_s`
seconds of wall time, and the figures the eval lines add (examples/s, time on the clock, ETA).

    [resnet/mini] step 120 epoch 2.67: loss 1.2345, 1,234 examples/s, 0:42 on the clock;
        next eval in ~0:08, budget in ~3:10

The loop hands over only what it already has without waiting for the device: the step and host
time at which a dispatch's metrics were seen ready (the back-pressure `block_until_ready` on the
dispatch before the last one), and that dispatch's loss, read from the host only when a line is
due (`due()`), one dispatch late as MaxText does. The reporter itself never touches a device.

Where stdout is a terminal a progress bar (tqdm) shows the same figures, moved at every dispatch
seen ready; the lines at each eval are written above it. Anywhere else (a pipe, a log file, CI, a
notebook, the tests) it prints plain lines only, with no control characters. Process 0 only.
"""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

from tqdm import tqdm


def duration(seconds: float) -> str:
    """`seconds` as h:mm:ss or m:ss (a person reads minutes at a glance); "?" when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Reporter:
    """Progress lines (and, on a terminal, a bar) of one attempt of a supervised run.

    `prefix`: "[workload/config]"; `every_s`: the interval between lines (0: at every dispatch
    seen ready); `gbs`: examples per step; `train_samples`: examples per epoch; `eval_steps`: the
    cadence's eval steps (the last is the budget); `max_time_s`: the wall-clock budget (0: none);
    `run_start_unix`: the clock's anchor; `step`: where this attempt starts.
    """

    def __init__(self, prefix: str, every_s: float, gbs: int, train_samples: int,
                 eval_steps: tuple[int, ...], max_time_s: float, run_start_unix: float,
                 step: int, enabled: bool = True, stream: TextIO | None = None):
        self.prefix, self.every_s, self.gbs = prefix, float(every_s), int(gbs)
        self.train_samples, self.eval_steps = max(1, int(train_samples)), tuple(eval_steps)
        self.max_time_s, self.run_start_unix = float(max_time_s or 0.0), float(run_start_unix)
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stdout
        self.eval_s_mean: float | None = None  # seconds per eval, once one has run
        self._last_line = time.monotonic()
        self._ref = (int(step), time.time())  # (step, host time) examples/s counts from
        self.bar = None
        if enabled and _is_terminal(self.stream):
            self.bar = tqdm(total=self.eval_steps[-1], initial=int(step), unit="step",
                            file=self.stream, dynamic_ncols=True, leave=False,
                            desc=prefix, smoothing=0.1)

    def due(self) -> bool:
        """True when a line is owed (the interval has passed): only then does the loop read a
        dispatch's loss from the device."""
        return self.enabled and time.monotonic() - self._last_line >= self.every_s

    def block_start(self, step: int) -> None:
        """A block starts at `step` (the device is idle: an eval or init just ended)."""
        self._ref = (int(step), time.time())

    def reached(self, step: int) -> None:
        """A dispatch ending at `step` was seen ready (moves the bar; no line)."""
        if self.bar is not None and step > self.bar.n:
            self.bar.update(step - self.bar.n)

    def rate(self, step: int, wall: float) -> float:
        """Examples/s from the reference point (the block's start or the last line) to (`step`,
        `wall`); NaN when no time has passed."""
        ref_step, ref_wall = self._ref
        dt = wall - ref_wall
        return (step - ref_step) * self.gbs / dt if dt > 0 and step > ref_step else math.nan

    def eta_budget(self, step: int, rate: float, elapsed: float) -> float:
        """Seconds to the budget: the steps left at `rate`, plus the evals left at the mean eval
        time seen so far; no later than `max_time_s` on the clock."""
        left = (self.eval_steps[-1] - step) * self.gbs / rate if rate > 0 else math.nan
        evals_left = sum(1 for s in self.eval_steps if s > step)
        if self.eval_s_mean is not None:
            left += evals_left * self.eval_s_mean
        if self.max_time_s:
            left = min(left, self.max_time_s - elapsed) if math.isfinite(left) else (
                self.max_time_s - elapsed)
        return max(left, 0.0) if math.isfinite(left) else math.nan

    def train_line(self, step: int, loss: float, wall: float, next_eval: int) -> str:
        """The line for the dispatch ending at `step` with `loss`, seen ready at host time
        `wall`, with the next eval at step `next_eval`; printed (or shown on the bar)."""
        rate = self.rate(step, wall)
        elapsed = wall - self.run_start_unix
        epoch = step * self.gbs / self.train_samples
        to_eval = (next_eval - step) * self.gbs / rate if rate > 0 else math.nan
        text = (f"step {step} epoch {epoch:.2f}: loss {loss:.4f}, {rate:,.0f} examples/s, "
                f"{duration(elapsed)} on the clock; next eval in ~{duration(to_eval)}, "
                f"budget in ~{duration(self.eta_budget(step, rate, elapsed))}")
        self._ref, self._last_line = (int(step), wall), time.monotonic()
        if self.bar is not None:
            self.reached(step)
            self.bar.set_postfix_str(f"loss {loss:.4f}, {rate:,.0f} ex/s", refresh=True)
        elif self.enabled:
            print(f"{self.prefix} {text}", file=self.stream, flush=True)
        return text

    def eval_figures(self, step: int, loss: float | None, rate: float, elapsed: float) -> str:
        """What an eval line adds after the quality: the block's last loss and examples/s, and
        the time to the budget."""
        loss_text = f"loss {loss:.4f}, " if loss is not None else ""
        return (f"{loss_text}{rate:,.0f} examples/s; "
                f"budget in ~{duration(self.eta_budget(step, rate, elapsed))}")

    def say(self, message: str) -> None:
        """Print a line (an eval's) above the bar, and restart the interval."""
        self._last_line = time.monotonic()
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(message, file=self.stream)
        else:
            print(message, file=self.stream, flush=True)

    def close(self) -> None:
        """Take the bar off the terminal (idempotent); lines printed after it stay readable."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False
