"""Does the host keep up? A workload's real input pipeline against what the chips consume.

`host_rate` pulls batches from a workload's own `train_batches` (the pipeline a run uses: tfds
decode and augmentation, canvas rendering, tokenized arrays) and measures examples per second
on this host after a warm-up. `needed_rate` turns a `tpubench fit` report into the examples per
second ONE host must deliver for the slice to run at its roofline step time (the fastest the
chips could go: a lower bound on step time, so an upper bound on what they consume). Their
ratio (`headroom`) above 1 means this host's pipeline could feed the slice even at the roofline;
below 1 the input is the bottleneck before any chip is. `benchmarks/input_pipeline.py` prints it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class HostRate:
    """Examples per second of one host's pipeline, and what each example weighs on the wire."""

    batches: int  # timed batches (after the warm-up)
    batch_size: int  # examples per host batch
    seconds: float
    bytes_per_example: float  # every array of the batch, as fed to the device

    @property
    def examples_per_s(self) -> float:
        return self.batches * self.batch_size / self.seconds if self.seconds > 0 else float("inf")

    @property
    def bytes_per_s(self) -> float:
        return self.examples_per_s * self.bytes_per_example


def batch_size_of(batch: Mapping[str, Any]) -> int:
    """Leading dimension shared by every array of a batch (ValueError if they disagree)."""
    sizes = {int(np.shape(v)[0]) for v in batch.values()}
    if len(sizes) != 1:
        raise ValueError(f"batch arrays disagree on the batch dimension: {sorted(sizes)}")
    return sizes.pop()


def host_rate(batches: Iterator[Mapping[str, Any]], timed: int, warmup: int = 2,
              clock: Callable[[], float] = time.perf_counter) -> HostRate:
    """Time `timed` batches of `batches` after `warmup` untimed ones (pipeline start-up, file
    opening, tf.data's first fill). Each batch is materialised as numpy, as the harness's
    prefetch thread does before putting it on the device."""
    if timed < 1 or warmup < 0:
        raise ValueError(f"timed >= 1 and warmup >= 0 batches, got {timed} and {warmup}")
    for _ in range(warmup):
        _materialise(next(batches))
    start = clock()
    size = nbytes = 0
    for _ in range(timed):
        batch = _materialise(next(batches))
        size = batch_size_of(batch)
        nbytes = sum(v.nbytes for v in batch.values())
    return HostRate(timed, size, clock() - start, nbytes / size)


def _materialise(batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in batch.items()}


def needed_rate(fit_report: Mapping[str, Any], num_hosts: int) -> float:
    """Examples/s one host must feed for the slice of a `tpubench fit --json` report to run at
    its roofline step time: global batch / roofline step time / hosts (inf if no bound)."""
    step_s = float(fit_report["roofline_step_s"])
    if num_hosts < 1:
        raise ValueError(f"num_hosts must be >= 1, got {num_hosts}")
    if step_s <= 0:
        return float("inf")
    return float(fit_report["global_batch_size"]) / step_s / num_hosts


def headroom(rate: HostRate, needed: float) -> float:
    """Host rate / needed rate: >= 1, the host keeps up even at the roofline."""
    return rate.examples_per_s / needed if needed > 0 else float("inf")
