"""Data sources and the host side of feeding devices.

Workloads produce per-process numpy batches (`Workload.train_batches`); this module groups them
into blocks of K steps, moves them to devices on a background thread (so the host never makes the
device wait), pads eval to a fixed number of fixed-shape batches, and provides the deterministic
sample order that in-memory datasets use (the data position is the step).
"""

from __future__ import annotations

import itertools
import queue
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator

import jax
import numpy as np

from tpubench.errors import UsageError
from tpubench.workload import Batch, Workload


def stack_blocks(batches: Iterator[Batch], sizes: int | Iterable[int]) -> Iterator[Batch]:
    """Group consecutive batches into [k, B, ...] blocks, one per dispatch: `sizes` is K (every
    block K batches) or the sequence of dispatch sizes (K-step blocks and one-step remainders)."""
    sizes = itertools.repeat(sizes) if isinstance(sizes, int) else sizes
    for k in sizes:
        chunk = []
        for _ in range(k):
            try:
                chunk.append(next(batches))
            except StopIteration:
                return
        yield {key: np.stack([b[key] for b in chunk]) for key in chunk[0]}


class Prefetcher:
    """Runs `put(host_block)` for the next `depth` blocks on a daemon thread.

    Device transfers are asynchronous, so this overlaps host-side decoding and host->device
    copies with the device's compute. Exceptions in the producer re-raise in the consumer.
    """

    _DONE = object()

    def __init__(self, blocks: Iterator[Batch], put: Callable[[Batch], Batch], depth: int = 2):
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(blocks, put), daemon=True)
        self._thread.start()

    def _run(self, blocks, put):
        try:
            for block in blocks:
                if self._stop.is_set():
                    return
                self._queue.put(put(block))
            self._queue.put(self._DONE)
        except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
            self._queue.put(e)

    def __next__(self) -> Batch:
        item = self._queue.get()
        if item is self._DONE:
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        return item

    def __iter__(self):
        return self

    def close(self) -> None:
        """Stop producing (the thread exits at its next block)."""
        self._stop.set()
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass


def fixed_eval_batches(
    batches: Iterator[Batch], num_batches: int, template: Batch | None = None
) -> Iterator[Batch]:
    """Exactly `num_batches` batches: the workload's, then all-padding copies (mask 0) if its
    iterator runs out early, so every process runs the same number of eval steps."""
    last = template
    count = 0
    for batch in batches:
        if count == num_batches:
            return
        last = batch
        count += 1
        yield batch
    if last is None and count < num_batches:
        raise UsageError("The eval dataset produced no batches: check the eval split/data_dir.")
    while count < num_batches:
        pad = {k: np.zeros_like(v) for k, v in last.items()}
        count += 1
        yield pad


def sample_order(num_examples: int, seed: int, epoch: int) -> np.ndarray:
    """The permutation of an in-memory dataset for one epoch (deterministic in seed, epoch)."""
    return np.random.default_rng([seed, epoch]).permutation(num_examples)


def in_memory_batches(
    arrays: dict[str, np.ndarray],
    global_batch_size: int,
    seed: int,
    start_step: int,
    process_index: int,
    process_count: int,
) -> Iterator[Batch]:
    """Train batches from arrays held in memory: an endless stream of epochs, each reshuffled,
    starting at `start_step`; this process gets its contiguous slice of every global batch."""
    n = len(next(iter(arrays.values())))
    local = global_batch_size // process_count
    lo = process_index * local
    step = start_step
    cache: dict[int, np.ndarray] = {}
    while True:
        first = step * global_batch_size + lo
        idx = np.empty(local, np.int64)
        for j in range(local):
            epoch, pos = divmod(first + j, n)
            if epoch not in cache:
                cache.clear()
                cache[epoch] = sample_order(n, seed, epoch)
            idx[j] = cache[epoch][pos]
        yield {k: v[idx] for k, v in arrays.items()}
        step += 1


def in_memory_eval_batches(
    arrays: dict[str, np.ndarray], eval_batch_size: int, process_index: int, process_count: int
) -> Iterator[Batch]:
    """Eval batches over arrays in order, padded with mask 0; each process takes a strided
    share of every global eval batch."""
    n = len(next(iter(arrays.values())))
    local = eval_batch_size // process_count
    for start in range(0, n, eval_batch_size):
        lo = start + process_index * local
        idx = np.arange(lo, lo + local)
        valid = idx < n
        idx = np.where(valid, idx, 0)
        batch = {k: v[idx] for k, v in arrays.items()}
        batch["mask"] = valid.astype(np.float32)
        yield batch


def synthetic_eval_batches(
    workload: Workload, num_batches: int, process_count: int, process_index: int = 0
) -> Iterator[Batch]:
    """This process's eval batches of the synthetic source: the workload's own
    `synthetic_eval_batch` (deterministic in config.run.seed, the batch and the process), made on
    the host's CPU device, plus an all-ones mask. Synthetic data measures speed, not quality."""
    bs = workload.config.eval.batch_size // process_count
    make = _synthetic_eval_fns.get(workload)
    if make is None:
        owner = weakref.ref(workload)  # the cache must not keep its key alive

        def generate(seed, index, batch_size):
            # The key is made while tracing: no eager op (and no compile) per batch.
            key = jax.random.fold_in(jax.random.PRNGKey(seed), index)
            return owner().synthetic_eval_batch(key, batch_size)

        make = _synthetic_eval_fns[workload] = jax.jit(generate, static_argnums=2)
    seed = np.int32(workload.config.run.seed)
    for i in range(num_batches):
        # Outside the run's mesh, on the CPU backend when there is one (a small host-side
        # job); the contexts are left before the batch is handed on.
        with jax.set_mesh(None), jax.default_device(_host_device()):
            batch = jax.device_get(make(seed, np.int32(i * process_count + process_index), bs))
        batch["mask"] = np.ones((bs,), np.float32)
        yield batch


# Workload -> its jitted synthetic eval batch maker (compiled once, not at every eval).
_synthetic_eval_fns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _host_device() -> jax.Device:
    """The first CPU device (JAX starts the CPU backend next to an accelerator's), or, if the
    platforms were restricted, the first local device."""
    try:
        return jax.local_devices(backend="cpu")[0]
    except RuntimeError:
        return jax.local_devices()[0]
