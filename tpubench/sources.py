"""A workload's data sources as one table: `config.data.source` name -> `DataSource`.

Each workload declares `data_sources = {"tfds": DataSource(...), "mnist5k": DataSource(...)}`;
the `Workload` base class looks the configured name up (a `UsageError` listing every known
source otherwise) and runs its `check`, `train_batches` and `eval_batches`. "synthetic" is never
in a table: the harness generates those batches on device (`Workload.synthetic_batch`).

The functions take the workload first (it holds the config and any host-side state a source
caches, e.g. a tokenizer), then the arguments of the `Workload` method they serve.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from tpubench.errors import UsageError

SYNTHETIC = "synthetic"

Batch = dict[str, Any]


def _nothing_to_check(workload: Any) -> None:
    del workload


@dataclasses.dataclass(frozen=True)
class DataSource:
    """One `config.data.source` of a workload.

    description: what it is and where it comes from, one phrase (shown for an unknown name).
    train_batches(workload, start_step, process_index, process_count): `Workload.train_batches`.
    eval_batches(workload, process_index, process_count): `Workload.eval_batches`.
    check(workload): `Workload.check_data` for this source: `UsageError` naming how to get the
      data when it is missing; paths and manifests only, never the data (MLPerf: nothing reads
      the dataset before run_start).
    """

    description: str
    train_batches: Callable[[Any, int, int, int], Iterator[Batch]]
    eval_batches: Callable[[Any, int, int], Iterator[Batch]]
    check: Callable[[Any], None] = _nothing_to_check

    @classmethod
    def of_config(
        cls,
        description: str,
        train_batches: Callable[[Any, int, int, int], Iterator[Batch]],
        eval_batches: Callable[[Any, int, int], Iterator[Batch]],
        check: Callable[[Any], None] | None = None,
    ) -> DataSource:
        """A source whose functions need only the config: `train_batches(config, start_step,
        process_index, process_count)`, `eval_batches(config, ...)`, `check(config)`."""
        return cls(
            description,
            lambda w, *args: train_batches(w.config, *args),
            lambda w, *args: eval_batches(w.config, *args),
            (lambda w: check(w.config)) if check is not None else _nothing_to_check,
        )


def tfds_builder(config: Any, how_to_build: str) -> Any:
    """The tfds builder of `config.data.dataset` in `config.data.dir`, or a `UsageError` that
    says how to build it (`how_to_build`: the dataset's own steps) and how to run without it.
    Looks at the prepared files only (nothing reads the data before run_start)."""
    import tensorflow_datasets as tfds

    builder = tfds.builder(config.data.dataset, data_dir=config.data.dir or None)
    if not builder.is_prepared():
        raise UsageError(
            f"The tfds dataset {config.data.dataset!r} is not prepared in data_dir "
            f"{config.data.dir or '~/tensorflow_datasets'}. {how_to_build} and pass "
            "--config.data.dir=DATA_DIR (or set TPUBENCH_DATA_DIR). To measure speed without "
            "data, use --config.data.source=synthetic.")
    return builder


def known(table: Mapping[str, DataSource]) -> str:
    """'tfds (ImageNet ...); mnist5k (...); or synthetic (generated on device)'."""
    items = [f"{name} ({source.description})" for name, source in table.items()]
    return "; ".join(items + [f"or {SYNTHETIC} (random batches generated on device)"])


def lookup(workload_name: str, table: Mapping[str, DataSource], name: str) -> DataSource:
    """The table's entry for `name`; `UsageError` listing the known sources otherwise."""
    if name in table:
        return table[name]
    if name == SYNTHETIC:
        raise UsageError(
            f"{workload_name}: data_source={SYNTHETIC} has no host-side batches (the harness "
            "generates them on device); this is a bug of the caller, not of the config.")
    raise UsageError(
        f"{workload_name}: unknown data_source {name!r}. Use --config.data.source= one of: "
        f"{known(table)}.")


def check_name(workload_name: str, table: Mapping[str, DataSource], name: str) -> None:
    """`UsageError` unless `name` is in the table or is "synthetic"."""
    if name != SYNTHETIC:
        lookup(workload_name, table, name)
