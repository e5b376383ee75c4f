"""The query sample library: a workload's eval set, preprocessed on the host before the run.

MLPerf requires samples to be preprocessed and in memory before the timed run: the spec's
`load_samples()` runs once, untimed, when the QSL is built. LoadGen's load/unload callbacks
(called outside the timed region) only record which samples form the loaded set; `gather`
then builds a padded host batch for the SUT (its copy to the device is part of the timed
work, as in the reference implementations).

Length buckets (`InferenceSpec.length_buckets`, samples with `Samples.lengths`): every sample is
assigned the smallest bucket that holds it (`padded_lengths`), and `gather` cuts the
variable-length inputs of a batch to that bucket's length.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import mlperf_loadgen as lg
import numpy as np

from tpubench.errors import UsageError
from tpubench.infer.spec import PyTree, Samples


def padded_lengths(samples: Samples, length_buckets: Sequence[int]) -> np.ndarray | None:
    """Per sample, the smallest of `length_buckets` >= its length (None without buckets).

    `UsageError` when a bucket exceeds what the inputs hold or a sample fits no bucket;
    `ValueError` when the spec's samples cannot be length-bucketed (a spec bug)."""
    if not length_buckets:
        return None
    buckets = np.asarray(sorted(set(int(b) for b in length_buckets)), np.int64)
    if samples.lengths is None or not samples.length_inputs:
        raise ValueError("length_buckets need Samples.lengths and Samples.length_inputs")
    if samples.row_splits is not None:
        raise ValueError("length buckets and variable-size samples (row_splits) do not combine")
    if buckets[0] < 1:
        raise UsageError(f"Length buckets must be >= 1, got {buckets.tolist()}.")
    capacity = min(int(samples.inputs[k].shape[1]) for k in samples.length_inputs)
    if buckets[-1] > capacity:
        raise UsageError(f"Length bucket {int(buckets[-1])} is longer than the samples' padded "
                         f"length {capacity}: pass length buckets <= {capacity}.")
    lengths = np.asarray(samples.lengths, np.int64)
    if lengths.max() > buckets[-1]:
        raise UsageError(f"The longest sample has length {int(lengths.max())}, more than the "
                         f"largest length bucket ({int(buckets[-1])}): add a bucket >= "
                         f"{int(lengths.max())}.")
    return buckets[np.searchsorted(buckets, lengths, side="left")]


class QuerySampleLibrary:
    """A LoadGen QSL over `samples`; use as a context manager (it owns a LoadGen handle).
    With `length_buckets`, `padded_lengths[i]` is the length sample i is served at."""

    def __init__(self, samples: Samples, performance_count: int = 0,
                 length_buckets: Sequence[int] = ()):
        self.samples = samples
        self.total_count = samples.count
        self.performance_count = min(performance_count or self.total_count, self.total_count)
        self.padded_lengths = padded_lengths(samples, length_buckets)
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

    def lengths_used(self) -> list[int]:
        """The length buckets some sample is served at, ascending ([] without buckets)."""
        if self.padded_lengths is None:
            return []
        return sorted(int(n) for n in np.unique(self.padded_lengths))

    def padded_positions(self) -> dict[str, int]:
        """Padded positions summed over all samples: served at their buckets, at the inputs'
        full length (one bucket), and the valid ones (the samples' own lengths)."""
        s = self.samples
        full = min(int(s.inputs[k].shape[1]) for k in s.length_inputs)
        return {"bucketed": int(self.padded_lengths.sum()), "unbucketed": full * s.count,
                "valid": int(np.sum(s.lengths))}

    def gather(self, indices: Sequence[int], batch_size: int, length: int = 0) -> PyTree:
        """Host batch of `batch_size` rows: the samples at `indices` (all their rows, in order,
        for variable-size samples), padded by repeating the first row (padding rows are
        computed and discarded, never reported). `length` > 0: the `length_inputs` cut to
        their first `length` positions (every sample must fit: the SUT's length bucket)."""
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
        if not length:
            return jax.tree.map(lambda a: np.take(a, idx, axis=0), self.samples.inputs)
        cut = self.samples.length_inputs
        return {k: a[idx, :length] if k in cut else np.take(a, idx, axis=0)
                for k, a in self.samples.inputs.items()}

    def leading_samples(self, rows: int, length: int = 0) -> list[int]:
        """The first samples whose rows fill at most `rows` (at least the first sample): the
        batch a bucket is timed on before the run; `length` > 0: the first samples served at
        that length bucket."""
        if length:
            return np.flatnonzero(self.padded_lengths == length)[:max(1, rows)].tolist()
        sizes = self.samples.sample_rows(range(self.total_count))
        n = int(np.searchsorted(np.cumsum(sizes), rows, side="right"))
        return list(range(max(1, min(n, self.total_count))))

    def example_batch(self, batch_size: int, length: int = 0) -> PyTree:
        """Shapes/dtypes of a batch of `batch_size` (for ahead-of-time compilation), with the
        `length_inputs` at `length` when > 0."""
        def shape(key: str | None, a: np.ndarray) -> jax.ShapeDtypeStruct:
            rest = a.shape[1:]
            if length and key in self.samples.length_inputs:
                rest = (length,) + rest[1:]
            return jax.ShapeDtypeStruct((batch_size,) + rest, a.dtype)

        if not length:
            return jax.tree.map(lambda a: shape(None, a), self.samples.inputs)
        return {k: shape(k, a) for k, a in self.samples.inputs.items()}
