"""The query sample library: a workload's eval set, preprocessed on the host before the run.

MLPerf requires samples to be preprocessed and in memory before the timed run: the spec's
`load_samples()` runs once, untimed, when the QSL is built. LoadGen's load/unload callbacks
(called outside the timed region) only record which samples form the loaded set; `gather`
then builds a padded host batch for the SUT (its copy to the device is part of the timed
work, as in the reference implementations).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import mlperf_loadgen as lg
import numpy as np

from tpubench.infer.spec import PyTree, Samples


class QuerySampleLibrary:
    """A LoadGen QSL over `samples`; use as a context manager (it owns a LoadGen handle)."""

    def __init__(self, samples: Samples, performance_count: int = 0):
        self.samples = samples
        self.total_count = samples.count
        self.performance_count = min(performance_count or self.total_count, self.total_count)
        self.loaded: set[int] = set()
        self.handle = None

    def __enter__(self) -> QuerySampleLibrary:
        self.handle = lg.ConstructQSL(
            self.total_count, self.performance_count, self._load, self._unload
        )
        return self

    def __exit__(self, *exc) -> None:
        if self.handle is not None:
            lg.DestroyQSL(self.handle)
            self.handle = None

    def _load(self, indices: Sequence[int]) -> None:
        self.loaded.update(int(i) for i in indices)

    def _unload(self, indices: Sequence[int]) -> None:
        self.loaded.difference_update(int(i) for i in indices)

    def gather(self, indices: Sequence[int], batch_size: int) -> PyTree:
        """Host batch of `batch_size` rows: the samples at `indices` (all their rows, in order,
        for variable-size samples), padded by repeating the first row (padding rows are
        computed and discarded, never reported)."""
        splits = self.samples.row_splits
        if splits is None:
            rows = np.asarray(indices, np.int64)
        else:
            idx = np.asarray(indices, np.int64)
            starts, counts = splits[idx], splits[idx + 1] - splits[idx]
            first = np.cumsum(counts) - counts  # where each sample starts in the batch
            rows = np.repeat(starts - first, counts) + np.arange(int(counts.sum()))
        idx = np.empty(batch_size, np.int64)
        idx[: len(rows)] = rows
        idx[len(rows) :] = rows[0]
        return jax.tree.map(lambda a: np.take(a, idx, axis=0), self.samples.inputs)

    def leading_samples(self, rows: int) -> list[int]:
        """The first samples whose rows fill at most `rows` (at least the first sample): the
        batch a bucket is timed on before the run."""
        sizes = self.samples.sample_rows(range(self.total_count))
        n = int(np.searchsorted(np.cumsum(sizes), rows, side="right"))
        return list(range(max(1, min(n, self.total_count))))

    def example_batch(self, batch_size: int) -> PyTree:
        """Shapes/dtypes of a batch of `batch_size` (for ahead-of-time compilation)."""
        return jax.tree.map(
            lambda a: jax.ShapeDtypeStruct((batch_size,) + a.shape[1:], a.dtype),
            self.samples.inputs,
        )
