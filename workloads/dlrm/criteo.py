"""Readers of the Criteo 1TB Click Logs, in the two formats the MLPerf DLRM reference uses.

Row schema: label, 13 integer (count) features, 26 categorical features (32-bit hashes written
as 8 hex digits). Both readers return the same arrays, transformed as the reference does:

    label  float32 [n]         0 or 1
    dense  float32 [n, 13]     log(1 + max(x, 0)); a missing value is 0
    sparse int32   [n, 26]     the category's integer id modulo its table's row count, so
                               every id falls inside its (max 40M-row) table

Formats:
  * TSV day files (`day_0` .. `day_23`, optionally `.gz`), as downloaded from Criteo: one row a
    line, tab-separated, empty fields for missing values; categories are hex and are hashed into
    the table range by `int(hex, 16) % rows` (a missing category is 0).
  * The reference's binary file (facebookresearch/dlrm `data_loader_terabyte.py`, the MLPerf
    `terabyte_processed_{train,test}.bin`): rows of 40 little-endian int32, label + 13 dense +
    26 sparse, categories already mapped to ids; read by memory map, so a step's rows are a seek.

Position: train step `s` is rows [s*B, (s+1)*B) of the train stream (days 0-22 in order, or
the train `.bin`), wrapping at the end (a run is one epoch); with `data.shuffle_blocks` (the
full config, the reference's `--mlperf-bin-shuffle`) the `.bin`'s batch blocks are visited in a
random order instead (`block_order`). This process reads its contiguous share of each global
batch. The binary reader seeks there; the TSV reader has to skip lines.
Eval is the first `eval_samples` rows of day 23 (TSV) or of the test `.bin`.
"""

from __future__ import annotations

import gzip
import itertools
import os
import pathlib
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from tpubench.errors import UsageError

NUM_DENSE = 13
NUM_SPARSE = 26
ROW_INTS = 1 + NUM_DENSE + NUM_SPARSE  # int32 per row in the binary format
TRAIN_DAYS = tuple(range(23))
EVAL_DAY = 23
BINARY_TRAIN = "terabyte_processed_train.bin"
BINARY_EVAL = "terabyte_processed_test.bin"
PREPARE_HELP = (
    "Download the Criteo 1TB Click Logs (https://ailab.criteo.com/download-criteo-1tb-click-"
    "logs-dataset/) into --config.data.dir as day_0 .. day_23 (plain or .gz) for "
    "--config.data.source=criteo_tsv, or build the MLPerf binary files with the reference's "
    "preprocessing (facebookresearch/dlrm: python dlrm_s_pytorch.py --data-set=terabyte "
    "--max-ind-range=40000000 --memory-map ...) and place terabyte_processed_train.bin and "
    "terabyte_processed_test.bin there for --config.data.source=criteo_binary."
)

Arrays = dict[str, np.ndarray]


def transform(label: np.ndarray, dense: np.ndarray, sparse: np.ndarray,
              table_sizes: Sequence[int]) -> Arrays:
    """The reference's feature transform on raw integer columns (see the module docstring)."""
    sizes = np.asarray(table_sizes, np.int64)
    return {
        "label": np.asarray(label, np.float32),
        "dense": np.log1p(np.maximum(np.asarray(dense, np.float64), 0.0)).astype(np.float32),
        "sparse": (np.asarray(sparse, np.int64) % sizes).astype(np.int32),
    }


def _int_or_zero(text: str, base: int) -> int:
    if not text:
        return 0
    return int(text, 16) if base == 16 else int(float(text))


def parse_lines(lines: Iterable[str], table_sizes: Sequence[int], delimiter: str = "\t") -> Arrays:
    """Parse Criteo rows (label, 13 ints, 26 hex) into the transformed arrays.

    `delimiter="\t"` is the 1TB day-file format; "," reads the CSV samples that circulate with
    the same columns (integers may be written as "260.0"). Raises ValueError naming the row
    when a row does not have 40 fields.
    """
    labels, dense, sparse = [], [], []
    for number, line in enumerate(lines):
        fields = line.rstrip("\r\n").split(delimiter)
        if len(fields) != ROW_INTS:
            raise ValueError(f"Criteo row {number} has {len(fields)} fields, expected {ROW_INTS}")
        labels.append(_int_or_zero(fields[0], 10))
        dense.append([_int_or_zero(f, 10) for f in fields[1:1 + NUM_DENSE]])
        sparse.append([_int_or_zero(f, 16) for f in fields[1 + NUM_DENSE:]])
    return transform(
        np.array(labels, np.int64).reshape(-1),
        np.array(dense, np.int64).reshape(-1, NUM_DENSE),
        np.array(sparse, np.int64).reshape(-1, NUM_SPARSE),
        table_sizes,
    )


def day_file(data_dir: str | os.PathLike, day: int) -> pathlib.Path | None:
    """`data_dir/day_<day>` or its `.gz`, whichever exists (None if neither)."""
    for name in (f"day_{day}", f"day_{day}.gz"):
        path = pathlib.Path(data_dir) / name
        if path.exists():
            return path
    return None


def _lines(paths: Sequence[pathlib.Path]) -> Iterator[str]:
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            yield from f


def check_files(data_dir: str, source: str) -> None:
    """`UsageError` with the preparation command unless `source`'s files are all in `data_dir`
    (existence only: nothing is read before run_start)."""
    if not data_dir or not pathlib.Path(data_dir).is_dir():
        raise UsageError(f"dlrm: --config.data.dir={data_dir!r} is not a directory. {PREPARE_HELP}")
    if source == "criteo_tsv":
        missing = [f"day_{d}" for d in (*TRAIN_DAYS, EVAL_DAY) if day_file(data_dir, d) is None]
    else:
        missing = [n for n in (BINARY_TRAIN, BINARY_EVAL)
                   if not (pathlib.Path(data_dir) / n).exists()]
    if missing:
        raise UsageError(f"dlrm: missing in {data_dir}: {', '.join(missing)}. {PREPARE_HELP}")


def tsv_train_batches(data_dir: str, table_sizes: Sequence[int], global_batch_size: int,
                      start_step: int, process_index: int, process_count: int) -> Iterator[Arrays]:
    """Train batches from the TSV day files (see the module docstring for the position)."""
    paths = [day_file(data_dir, d) for d in TRAIN_DAYS]
    local = global_batch_size // process_count
    lo, hi = process_index * local, (process_index + 1) * local
    while True:  # each pass over days 0-22 is one epoch
        lines = _lines(paths)
        for _ in range(start_step * global_batch_size):
            if next(lines, None) is None:
                raise UsageError(f"dlrm: the TSV train days hold fewer rows than step {start_step}")
        start_step = 0
        while True:
            chunk = list(itertools.islice(lines, global_batch_size))
            if len(chunk) < global_batch_size:  # drop the last partial batch, start over
                break
            yield parse_lines(chunk[lo:hi], table_sizes)


def _pad(arrays: Arrays, size: int) -> Arrays:
    """Pad `arrays` to `size` rows with zeros and add the eval mask (1 = real row)."""
    n = len(arrays["label"])
    out = {k: np.concatenate([v, np.zeros((size - n, *v.shape[1:]), v.dtype)])
           for k, v in arrays.items()}
    out["mask"] = (np.arange(size) < n).astype(np.float32)
    return out


def tsv_eval_batches(data_dir: str, table_sizes: Sequence[int], eval_samples: int,
                     eval_batch_size: int, process_index: int,
                     process_count: int) -> Iterator[Arrays]:
    """Eval batches over the first `eval_samples` rows of day 23, streamed, padded with mask 0;
    this process takes its contiguous share of each global eval batch."""
    lines = _lines([day_file(data_dir, EVAL_DAY)])
    local = eval_batch_size // process_count
    lo, hi = process_index * local, (process_index + 1) * local
    for start in range(0, eval_samples, eval_batch_size):
        count = min(eval_batch_size, eval_samples - start)
        chunk = list(itertools.islice(lines, count))
        yield _pad(parse_lines(chunk[lo:hi], table_sizes), local)


def open_binary(path: str | os.PathLike) -> np.ndarray:
    """Memory-map a reference `.bin` file as [rows, 40] int32 (no data is read yet)."""
    size = os.path.getsize(path)
    if size % (4 * ROW_INTS):
        raise ValueError(f"{path}: {size} bytes is not a whole number of {ROW_INTS}-int32 rows")
    return np.memmap(path, dtype="<i4", mode="r", shape=(size // (4 * ROW_INTS), ROW_INTS))


def binary_rows(rows: np.ndarray, table_sizes: Sequence[int]) -> Arrays:
    """Transform [n, 40] int32 rows of the binary format."""
    rows = np.asarray(rows)
    return transform(rows[:, 0], rows[:, 1:1 + NUM_DENSE], rows[:, 1 + NUM_DENSE:], table_sizes)


def block_order(num_blocks: int, epoch: int, seed: int) -> np.ndarray:
    """Epoch `epoch`'s order of the train file's batch blocks under the reference's
    `--mlperf-bin-shuffle` (facebookresearch/dlrm bench/run_and_time.sh passes it;
    dlrm_data_pytorch.py line 418 gives the DataLoader `RandomSampler(train_data)`, and
    data_loader_terabyte.py `CriteoBinDataset.__getitem__(idx)` reads the idx-th block of
    `batch_size` rows): a uniformly random permutation of the blocks, drawn anew each epoch,
    here from (seed, epoch) so that a resumed run continues the same order."""
    return np.random.default_rng([seed, epoch]).permutation(num_blocks)


def binary_train_batches(path: str | os.PathLike, table_sizes: Sequence[int],
                         global_batch_size: int, start_step: int, process_index: int,
                         process_count: int, shuffle_seed: int | None = None
                         ) -> Iterator[Arrays]:
    """Train batches from the binary file, this process's contiguous share of each.

    With `shuffle_seed` (the full config: the reference's `--mlperf-bin-shuffle`), step `s` of
    epoch `e` reads block `block_order(blocks, e, seed)[s % blocks]`, the file cut into
    ceil(rows / batch) blocks of `global_batch_size` rows as `CriteoBinDataset` cuts it; the
    last, partial block is completed with the file's first rows (a static batch shape; the
    reference trains it as a smaller batch). Without: a seek per step through the file in
    order, wrapping at the end."""
    data = open_binary(path)
    n = len(data)
    local = global_batch_size // process_count
    blocks = -(-n // global_batch_size)
    step, order, order_epoch = start_step, None, -1
    while True:
        if shuffle_seed is None:
            first = (step * global_batch_size + process_index * local) % n
        else:
            epoch, index = divmod(step, blocks)
            if epoch != order_epoch:
                order, order_epoch = block_order(blocks, epoch, shuffle_seed), epoch
            first = int(order[index]) * global_batch_size + process_index * local
        if first + local <= n:
            rows = data[first:first + local]
        else:
            rows = data[np.arange(first, first + local) % n]
        yield binary_rows(rows, table_sizes)
        step += 1


def binary_eval_batches(path: str | os.PathLike, table_sizes: Sequence[int], eval_samples: int,
                        eval_batch_size: int, process_index: int,
                        process_count: int) -> Iterator[Arrays]:
    """Eval batches over the first `eval_samples` rows of the test file, as `tsv_eval_batches`."""
    data = open_binary(path)
    eval_samples = min(eval_samples, len(data))
    local = eval_batch_size // process_count
    for start in range(0, eval_samples, eval_batch_size):
        lo = min(start + process_index * local, eval_samples)
        hi = min(lo + local, eval_samples)
        yield _pad(binary_rows(data[lo:hi], table_sizes), local)
