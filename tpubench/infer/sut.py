"""The system under test: LoadGen queries -> batches -> pre-compiled `apply` -> completions.

Three threads meet here:
  * LoadGen's issue thread calls `issue_queries`, which only appends samples to a queue.
  * The dispatcher takes up to `max_batch` queued samples (waiting at most `max_wait_s` for the
    oldest one to get company, 0 outside Server), pads them to the smallest compiled batch
    bucket, and launches the executable asynchronously.
  * The completer blocks on the result (`block_until_ready`), copies it to the host and calls
    `QuerySamplesComplete`; the host array that the response pointers point into stays
    referenced until that call returns.
Variable-size samples (`Samples.row_splits`, e.g. a DLRM user's pairs): a batch takes whole
samples up to `max_batch` ROWS, buckets count rows, and each sample's response is its rows.
Length buckets (`InferenceSpec.length_buckets`, e.g. RNN-T feature frames): pending samples
are queued per length bucket and a batch never mixes lengths: the dispatcher serves the queue
whose head is the oldest sample (so the oldest sample is always in the next batch, as without
buckets) with as many samples of that length as fit. Mixing lengths (padding a batch to its
longest sample's bucket) would let one long sample make every sample of its batch pay for the
longest length, which in an Offline query of mixed lengths is nearly every batch.
Nothing is compiled during the run: `compile_buckets` builds one executable per batch size
(and per used length) ahead of time, and an executable cannot recompile.
"""

from __future__ import annotations

import collections
import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import mlperf_loadgen as lg
import numpy as np

from tpubench.infer.qsl import QuerySampleLibrary
from tpubench.infer.spec import PyTree

_STOP = object()


@dataclasses.dataclass(frozen=True)
class Bucket:
    """One compiled batch size, with its measured warm latency (seconds): the median of a few
    runs (what batching decisions use) and the fastest (what throughput estimates use).

    With length buckets, this is the batch size at its LONGEST used length (so the latency is
    the worst case, which Server batching needs), and `lengths` maps every used length to its
    own compiled `Bucket` (this one included); `at(length)` picks one."""

    batch_size: int
    executable: Any
    latency_s: float
    best_latency_s: float = 0.0
    length: int = 0
    lengths: dict[int, Bucket] = dataclasses.field(default_factory=dict)

    def at(self, length: int) -> Bucket:
        """The bucket of this batch size at `length` (itself without length buckets)."""
        return self.lengths[length] if length else self


def compile_buckets(
    apply: Callable[[PyTree, PyTree, PyTree], Any],
    params: PyTree,
    model_state: PyTree,
    qsl: QuerySampleLibrary,
    batch_sizes: Sequence[int],
    timing_repeats: int = 5,
) -> dict[int, Bucket]:
    """AOT-compile `apply` for each batch size (and each length bucket some sample uses) and
    time it on real samples (untimed warm-up).

    The timing covers what the SUT does per batch: host gather, transfer, compute, copy back.
    """
    buckets = {}
    for b in sorted(set(int(b) for b in batch_sizes)):
        per_length = {}
        for length in qsl.lengths_used() or [0]:
            exe = jax.jit(apply).lower(params, model_state,
                                       qsl.example_batch(b, length)).compile()
            indices = qsl.leading_samples(b, length)
            times = []
            for _ in range(timing_repeats + 1):
                t0 = time.perf_counter()
                batch = qsl.gather(indices, b, length)
                np.asarray(jax.block_until_ready(exe(params, model_state, batch)))
                times.append(time.perf_counter() - t0)
            per_length[length] = Bucket(b, exe, float(np.median(times[1:])),
                                        float(min(times[1:])), length)
        longest = per_length[max(per_length)]
        buckets[b] = dataclasses.replace(longest, lengths=per_length if longest.length else {})
    return buckets


class BatchingSUT:
    """A LoadGen SUT over pre-compiled buckets; use as a context manager (threads + handle)."""

    def __init__(
        self,
        qsl: QuerySampleLibrary,
        buckets: dict[int, Bucket],
        params: PyTree,
        model_state: PyTree,
        max_batch: int,
        max_wait_s: float = 0.0,
        max_in_flight: int = 2,
    ):
        self.qsl = qsl
        self.buckets = buckets
        self.sizes = sorted(buckets)
        self.params, self.model_state = params, model_state
        self.max_batch = min(int(max_batch), self.sizes[-1])  # rows, for variable-size samples
        self._rows = qsl.samples.sample_rows  # rows per sample (1 unless variable-size)
        self._variable = qsl.samples.row_splits is not None
        self._row_counts = self._rows(range(qsl.total_count)).tolist() if self._variable else []
        # the length bucket each sample is served at (all 0 without length buckets)
        padded = qsl.padded_lengths
        self._length = [0] * qsl.total_count if padded is None else padded.tolist()
        self.max_wait_s = float(max_wait_s)
        # length bucket -> pending (id, index, arrival_s), oldest first
        self._pending: dict[int, collections.deque] = collections.defaultdict(collections.deque)
        self._cond = threading.Condition()
        self._stopping = False
        self._done: queue.Queue = queue.Queue(maxsize=max_in_flight)
        self.batches_run: collections.Counter = collections.Counter()  # batch size -> count
        self.batches_by_length: collections.Counter = collections.Counter()  # (length, size)
        self.samples_completed = 0
        self.handle = None
        self._threads: list[threading.Thread] = []
        self.error: BaseException | None = None

    # ---- LoadGen callbacks -------------------------------------------------------------------
    def issue_queries(self, query_samples) -> None:
        """LoadGen issue thread: enqueue and return at once."""
        now = time.perf_counter()
        with self._cond:
            for q in query_samples:
                self._pending[self._length[q.index]].append((q.id, q.index, now))
            self._cond.notify()

    def flush_queries(self) -> None:
        """Nothing is held back beyond `max_wait_s`, so there is nothing to flush."""

    # ---- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> BatchingSUT:
        self._threads = [
            threading.Thread(target=self._dispatch_loop, name="sut-dispatch"),
            threading.Thread(target=self._complete_loop, name="sut-complete"),
        ]
        for t in self._threads:
            t.daemon = True
            t.start()
        self.handle = lg.ConstructSUT(self.issue_queries, self.flush_queries)
        return self

    def __exit__(self, *exc) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        for t in self._threads:
            t.join(timeout=60)
        if self.handle is not None:
            lg.DestroySUT(self.handle)
            self.handle = None

    def _fail(self, ids: list[int], error: BaseException) -> None:
        """Complete `ids` with empty responses so LoadGen finishes instead of waiting forever;
        the first error is re-raised by the runner after the test."""
        self.error = self.error or error
        lg.QuerySamplesComplete([lg.QuerySampleResponse(q, 0, 0) for q in ids])

    # ---- the two worker threads --------------------------------------------------------------
    def _take_batch(self) -> tuple[int, list[tuple[int, int, float]]] | None:
        """(length bucket, items) of the next batch: from the queue whose head is the oldest
        pending sample (ties: the shorter length), or None when stopping with nothing left."""
        with self._cond:
            while True:
                queues = [(q[0][2], length) for length, q in self._pending.items() if q]
                if queues:
                    arrival, length = min(queues)
                    pending = self._pending[length]
                    waited = time.perf_counter() - arrival
                    n, full = self._fitting(pending)
                    if full or waited >= self.max_wait_s:
                        return length, [pending.popleft() for _ in range(n)]
                    self._cond.wait(self.max_wait_s - waited)
                elif self._stopping:
                    return None
                else:
                    self._cond.wait()

    def _fitting(self, pending: collections.deque) -> tuple[int, bool]:
        """(n, full): the next batch is the n oldest samples of `pending` (one length bucket),
        and it is full (waiting cannot add to it): `max_batch` samples, or for variable-size
        samples as many as fit in `max_batch` rows (at least one sample, which always fits a
        bucket: `Engine.prepare`)."""
        if not self._variable:
            return min(self.max_batch, len(pending)), len(pending) >= self.max_batch
        total = 0
        for n, item in enumerate(pending):
            total += self._row_counts[item[1]]
            if total >= self.max_batch:
                return (n + 1, True) if total == self.max_batch or n == 0 else (n, True)
        return len(pending), False

    def _dispatch_loop(self) -> None:
        while (taken := self._take_batch()) is not None:
            length, items = taken
            ids = [q for q, _, _ in items]
            indices = [i for _, i, _ in items]
            rows = self._rows(indices) if self._variable else None
            try:
                need = int(rows.sum()) if rows is not None else len(ids)
                size = next(s for s in self.sizes if s >= need)
                batch = self.qsl.gather(indices, size, length)
                outputs = self.buckets[size].at(length).executable(
                    self.params, self.model_state, batch)
            except Exception as e:
                self._fail(ids, e)
                continue
            self.batches_run[size] += 1
            self.batches_by_length[(length, size)] += 1
            self._done.put((ids, rows, outputs))
        self._done.put(_STOP)

    def _complete_loop(self) -> None:
        while (item := self._done.get()) is not _STOP:
            ids, rows, outputs = item
            used = len(ids) if rows is None else int(rows.sum())
            try:
                host = np.ascontiguousarray(np.asarray(jax.block_until_ready(outputs))[:used])
            except Exception as e:
                self._fail(ids, e)
                continue
            row_bytes = host[0].nbytes if host.ndim > 1 else host.itemsize
            base = host.ctypes.data
            if rows is None:  # one row per sample
                rows = np.ones(len(ids), np.int64)
            starts = np.concatenate([[0], np.cumsum(rows)[:-1]])
            responses = [
                lg.QuerySampleResponse(qid, base + int(s) * row_bytes, int(n) * row_bytes)
                for qid, s, n in zip(ids, starts, rows, strict=True)
            ]
            lg.QuerySamplesComplete(responses)
            # `host` (the memory behind the pointers) is released only after the call returned.
            del responses, host
            self.samples_completed += len(ids)


def server_batching(
    buckets: dict[int, Bucket], latency_bound_ms: float
) -> tuple[int, float]:
    """(max_batch, max_wait_s) for Server that respect the p99 bound.

    A sample can wait `max_wait` for company, then for the batch already running (<= t(b)),
    then for its own batch (t(b)). We keep that sum within half the bound, leaving the other
    half to host noise: the largest bucket with 2*t(b) <= bound/3, and
    max_wait = min(bound/2 - 2*t(b), bound/4).
    """
    bound_s = latency_bound_ms / 1e3
    fitting = [b for b, k in sorted(buckets.items()) if 2 * k.latency_s <= bound_s / 3]
    max_batch = fitting[-1] if fitting else min(buckets)
    t = buckets[max_batch].latency_s
    max_wait = max(0.0, min(bound_s / 2 - 2 * t, bound_s / 4))
    return max_batch, max_wait
