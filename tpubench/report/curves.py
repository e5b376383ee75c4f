"""Training curves from a run's `metrics.jsonl`: loss and throughput against time on the clock.

`tpubench.loops.writers` appends one JSON object per record, `{"step", "wall_time", <scalars>}`:
the supervised loop writes `train/loss` per dispatch and `train/examples_per_s` per block (on
the block's last record), the self-play loop `loss` per generation. A point's time is
`wall_time - run_start_unix` (summary.json), in minutes, the same axis as the quality curve;
without `run_start_unix`, the first record's wall time. A torn last line (a run killed while
writing) and records without a number are skipped, never fatal.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import pathlib
from collections.abc import Sequence

from tpubench.report.logs import Run

LOSS_KEYS = ("train/loss", "loss")
THROUGHPUT_KEYS = ("train/examples_per_s", "examples_per_s")
CSV_FIELDS = ("run", "step", "minutes", "loss", "examples_per_s")


@dataclasses.dataclass(frozen=True)
class TrainPoint:
    """One metrics.jsonl record: step, minutes since run_start, loss and examples/s (None when
    the record has no such value)."""

    step: int
    minutes: float
    loss: float | None
    examples_per_s: float | None


def _value(record: dict, keys: Sequence[str]) -> float | None:
    for key in keys:
        v = record.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
    return None


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The JSON object records of a metrics.jsonl file, in order (bad lines skipped)."""
    records = []
    with open(path, errors="replace") as f:
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("wall_time"), int | float):
                records.append(record)
    return records


def train_curve(run: Run) -> list[TrainPoint]:
    """The run's loss/throughput points (empty without metrics.jsonl or such records)."""
    if not run.metrics_path or not pathlib.Path(run.metrics_path).is_file():
        return []
    records = read_metrics(run.metrics_path)
    t0 = run.run_start_unix if run.run_start_unix is not None else (
        records[0]["wall_time"] if records else 0.0)
    points = []
    for r in records:
        loss, rate = _value(r, LOSS_KEYS), _value(r, THROUGHPUT_KEYS)
        if loss is None and rate is None:
            continue  # an eval record
        points.append(TrainPoint(int(r.get("step", 0)), (r["wall_time"] - t0) / 60.0, loss, rate))
    return points


def write_csv(curves: dict[str, list[TrainPoint]], path: str | os.PathLike) -> pathlib.Path:
    """Every run's points as CSV (run, step, minutes, loss, examples_per_s; empty = none)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_FIELDS)
        for name, points in curves.items():
            for p in points:
                out.writerow([name, p.step, repr(p.minutes), _cell(p.loss),
                              _cell(p.examples_per_s)])
    return path


def _cell(value: float | None) -> str:
    # repr keeps every digit (a float read back is the one written); NaN is written "nan".
    return "" if value is None else repr(value)
