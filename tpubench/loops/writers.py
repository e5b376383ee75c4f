"""Metrics a person can watch while a run trains: `<workdir>/metrics.jsonl` and TensorBoard event
files under `<workdir>/tensorboard/` (`tensorboard --logdir <workdir>/tensorboard`).

    train/loss, train/accuracy, ...  one record per dispatch of K steps, at the step it ends on:
                                     the means over its K steps (`steps._dispatch_metrics`), as
                                     the train step returned them
    train/learning_rate              `Workload.learning_rate(step - 1)`: the rate of the
                                     dispatch's last update (steps count from 0)
    train/examples_per_s             per block (the dispatches between two evals), on the block's
                                     last record: samples / the block's stopwatch
    wall_time (every train record)   the host time the dispatch's metrics were seen ready (the
                                     loop's wait on it; the last at the block's stopwatch stop),
                                     not the time the record is written: a block's records are
                                     written together, one block late
    eval/<target metric>, eval/time_s  one record per eval
    (self-play, `tpubench.loops.selfplay`: one record per generation, the same two files)

Nothing here reads the device inside a block: the loop reads every dispatch's metrics in one host
read after the block's stopwatch has waited for them (so the read never stalls the device), one
block late, and hands them here as numpy. Learning rates are computed before run_start, for every
step a record will carry, in one compiled call (an eager jnp op on the clock would compile there).
Only process 0 writes.

The writers keep the method names of `clu.metric_writers.MetricWriter` (`write_scalars`, `flush`,
`close`). clu's own TensorBoard writer is not used: importing `clu.metric_writers` imports
TensorFlow (several seconds of untimed init on every run, measured here); tensorboard's own
pure-python `EventFileWriter` (the one `torch.utils.tensorboard` uses) writes the same files.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jax
import numpy as np

JSONL_NAME = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"


class JsonlWriter:
    """One JSON object per `write_scalars` call: {"step", "wall_time", <scalars>}, appended (a
    resumed run continues the same file). `wall_time` is the caller's when given, else now."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self._file = open(self.path, "a")  # noqa: SIM115 - closed by close()

    def write_scalars(self, step: int, scalars: Mapping[str, float],
                      wall_time: float | None = None) -> None:
        record = {"step": int(step), "wall_time": _wall(wall_time)}
        record.update({k: float(v) for k, v in scalars.items()})
        self._file.write(json.dumps(record) + "\n")

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _tensorboard_without_tensorflow() -> None:
    """Make tensorboard's writer use its own TF stub, not TensorFlow, unless TensorFlow is
    already imported. tensorboard resolves `tensorboard.compat.tf` lazily to `import tensorflow`
    when it is installed (it is, with the `tfds` extra): 5-13 s of untimed init measured here
    for a run that never uses TensorFlow. A module named `tensorboard.compat.notf` is
    tensorboard's own switch for "use the stub" (its `no_tensorflow` build target)."""
    if "tensorflow" in sys.modules or "tensorboard.compat.notf" in sys.modules:
        return
    sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")


class TensorBoardWriter:
    """Scalars as TensorBoard event files (tensorboard's pure-python writer and its TF stub)."""

    def __init__(self, logdir: str | os.PathLike):
        _tensorboard_without_tensorflow()
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.logdir = pathlib.Path(logdir)
        self._event, self._summary = event_pb2.Event, summary_pb2.Summary
        self._writer = EventFileWriter(os.fspath(logdir))

    def write_scalars(self, step: int, scalars: Mapping[str, float],
                      wall_time: float | None = None) -> None:
        values = [self._summary.Value(tag=k, simple_value=float(v)) for k, v in scalars.items()]
        self._writer.add_event(self._event(wall_time=_wall(wall_time), step=int(step),
                                           summary=self._summary(value=values)))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def learning_rates(workload: Any, steps: Sequence[int]) -> dict[int, float]:
    """{step: workload.learning_rate(step)} for every step in `steps`, in one compiled call (the
    schedules are jnp functions of the step), as host floats. Call before run_start."""
    steps = sorted(set(int(s) for s in steps))
    if not steps:
        return {}
    values = jax.jit(jax.vmap(workload.learning_rate))(np.asarray(steps, np.int32))
    values = np.broadcast_to(np.asarray(jax.device_get(values), np.float64), (len(steps),))
    return dict(zip(steps, values.tolist(), strict=True))


class ScalarWriters:
    """The run's metric files, metrics.jsonl and TensorBoard, fed the same scalars; a no-op on
    every process but 0 (`enabled=False`). Both loops write through it."""

    def __init__(self, workdir: str | os.PathLike, enabled: bool = True):
        self.enabled = enabled
        self.workdir = pathlib.Path(workdir)
        self._writers: list[Any] = []
        if enabled:
            self._writers = [JsonlWriter(self.workdir / JSONL_NAME),
                             TensorBoardWriter(self.workdir / TENSORBOARD_DIR)]

    def files(self) -> dict[str, str] | None:
        """What summary.json names (None on processes that write nothing)."""
        if not self.enabled:
            return None
        return {"jsonl": str(self.workdir / JSONL_NAME),
                "tensorboard": str(self.workdir / TENSORBOARD_DIR)}

    def write_scalars(self, step: int, scalars: Mapping[str, float],
                      wall_time: float | None = None) -> None:
        """One record of `scalars` at `step` in every file, at `wall_time` (default: now)."""
        for w in self._writers:
            w.write_scalars(step, scalars, wall_time)

    def flush(self) -> None:
        """Flush every file (a person watching sees the record now)."""
        for w in self._writers:
            w.flush()

    def close(self) -> None:
        """Close every file (idempotent)."""
        for w in self._writers:
            w.close()
        self._writers = []


class RunMetrics(ScalarWriters):
    """The supervised loop's records (above): one per dispatch, one per eval."""

    def __init__(self, workdir: str | os.PathLike, workload: Any, record_steps: Iterable[int],
                 enabled: bool = True):
        self.eval_key = f"eval/{workload.target.metric}"
        self._lr: dict[int, float] = {}
        if enabled:
            self._lr = learning_rates(workload, [max(0, s - 1) for s in record_steps])
        super().__init__(workdir, enabled)

    def train_block(self, dispatches: Sequence[tuple[int, Mapping[str, Any]]],
                    examples_per_s: float, wall_times: Sequence[float] | None = None) -> None:
        """One record per dispatch of a finished block: (end step, its metrics on the host), at
        each dispatch's own `wall_times` entry (the time its metrics were seen ready)."""
        if not self.enabled:
            return
        walls = list(wall_times) if wall_times is not None else [None] * len(dispatches)
        for i, ((step, metrics), wall) in enumerate(zip(dispatches, walls, strict=True)):
            scalars = {f"train/{k}": _scalar(v) for k, v in metrics.items()
                       if k not in ("finite", "last_loss")}
            scalars["train/learning_rate"] = self._lr[max(0, step - 1)]
            if i == len(dispatches) - 1:
                scalars["train/examples_per_s"] = examples_per_s
            self.write_scalars(step, scalars, wall)

    def eval(self, step: int, quality: float | Mapping[str, float], seconds: float) -> None:
        """One record per eval (a dict quality: one scalar per metric)."""
        if self.enabled:
            values = ({f"eval/{k}": v for k, v in quality.items()}
                      if isinstance(quality, Mapping) else {self.eval_key: quality})
            self.write_scalars(step, {**values, "eval/time_s": seconds})
            self.flush()


def _wall(wall_time: float | None) -> float:
    return time.time() if wall_time is None else float(wall_time)


def _scalar(value: Any) -> float:
    """A dispatch metric on the host: a scalar, or (pmap) one equal copy per device."""
    return float(np.ravel(np.asarray(value))[0])
