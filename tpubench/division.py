"""Closed or open division: what a `--config.KEY=VALUE` override may change in an MLPerf config.

An MLPerf config (`is_mlperf=True`, the `full` configs) is the closed-division benchmark. The
MLPerf Training Rules v0.7 (mlcommons/training_policies `training_rules.adoc`, section "Training
Loop > Hyperparameters") say:

    CLOSED: By default, the hyperparameters must be the same as the reference. [...] The following
    table lists the tunable hyperparameters for each allowed model,optimizer combination. The
    value of each tunable hyperparameter must meet the listed constraint.
    OPEN: Hyperparameters and optimizer may be freely changed.

The table is in two parts, keyed by the config keys that set each logged hyperparameter, each
entry with the rule text it comes from: `HARNESS` (`tpubench.mlperf.tunables`), the harness
settings the rules leave free because they do not change the benchmark (parallelism, numerics,
seed, data location, ...), and each workload's own rows, its class's `closed_tunables`
(`workloads/<name>/tunables.py`), found through `tpubench.registry` (`WORKLOADS`); this module
holds only the mechanism. Any other override (data source, eval set size, quality target, model
size, dataset, train_samples, eval cadence, ...) makes the run open division, and so does a tunable
value that breaks its constraint: `apply()` then sets `is_mlperf=False`,
`submission_division="open"` and records why in `open_reasons`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import ml_collections

from tpubench import registry
from tpubench.errors import UsageError
from tpubench.mlperf.tunables import HARNESS, Tunable, config_value


class _WorkloadTables(Mapping[str, Mapping[str, Tunable]]):
    """Workload name -> its own table: the `closed_tunables` of its class, looked up through the
    registry when asked for (so this module imports no workload). Lists the workloads whose
    table is not empty."""

    def __getitem__(self, name: str) -> Mapping[str, Tunable]:
        if name not in registry.names():
            raise KeyError(name)
        return registry.workload_class(name).closed_tunables

    def __iter__(self) -> Iterator[str]:
        return (n for n in registry.names() if self[n])

    def __len__(self) -> int:
        return sum(1 for _ in self)


# Workload name -> the keys its MLPerf config may change beyond `HARNESS`, each with its rule
# (`workloads/<name>/tunables.py`).
WORKLOADS: Mapping[str, Mapping[str, Tunable]] = _WorkloadTables()

# Keys the config file (or this module) sets: never overridden.
DERIVED = ("workload", "submission.open_reasons")


def tunable(workload: str, key: str) -> Tunable | None:
    """The rule that lets closed division change `key` (or a section above it), else None."""
    table = {**HARNESS, **WORKLOADS.get(workload, {})}
    parts = key.split(".")
    for i in range(len(parts), 0, -1):
        found = table.get(".".join(parts[:i]))
        if found is not None:
            return found
    return None


def violations(config: ml_collections.ConfigDict) -> list[str]:
    """Every constraint of the rules' table that `config`'s values break (tunable or not)."""
    table = {**HARNESS, **WORKLOADS.get(config.workload, {})}
    found = []
    for t in table.values():
        why = t.check(config) if t.check else None
        if why and why not in found:
            found.append(why)
    return found


def open_reasons(config: ml_collections.ConfigDict, changed: Iterable[str]) -> list[str]:
    """Why the overrides `changed` (dotted keys whose value they changed) leave closed division:
    one line per key no rule lets a submitter change, then every broken constraint."""
    reasons = []
    for key in changed:
        if key in ("is_mlperf", "submission.division"):
            reasons.append(f"{key}={config_value(config, key)!r} was asked for")
        elif tunable(config.workload, key) is None:
            reasons.append(
                f"{key}={config_value(config, key)!r} changes the benchmark: closed division keeps "
                "the reference's data, model, quality target and training method")
    return reasons + violations(config)


def check_override(config: ml_collections.ConfigDict, key: str, value: Any) -> None:
    """`UsageError` for an override that would relabel a run rather than change it."""
    if key in DERIVED:
        raise UsageError(
            f"--config.{key} cannot be overridden: it is set by the config file and the "
            "division rules. Pick another config (tpubench list) instead.")
    if key == "is_mlperf" and value and not config.is_mlperf:
        raise UsageError(
            f"--config.is_mlperf=True on the {config.get('config_name') or 'given'!s} config: "
            "only an MLPerf config (e.g. --config=full) can produce an MLPerf result, and an "
            "override never makes one. Drop the override or use an MLPerf config.")
    if key == "submission.division":
        if value not in ("open", "closed"):
            raise UsageError(
                f"--config.submission.division={value!r}: the division is 'closed' or 'open'.")
        if value == "closed" and not config.is_mlperf:
            raise UsageError(
                "--config.submission.division=closed on a non-MLPerf config: only an MLPerf "
                "config (is_mlperf=True, e.g. --config=full) runs in closed division.")


def apply(config: ml_collections.ConfigDict, changed: Iterable[str], mlperf: bool) -> list[str]:
    """Make a run open division when the overrides `changed` take its MLPerf config (`mlperf`:
    the config file's `is_mlperf`) out of closed division: `is_mlperf=False`,
    `submission_division="open"`, `open_reasons` set. Returns the reasons (empty when the run
    stays closed, and always for a non-MLPerf config)."""
    changed = list(changed)
    if not mlperf or not changed:
        return []
    reasons = open_reasons(config, changed)
    if reasons:
        with config.unlocked():
            config.is_mlperf = False
            config.submission.division = "open"
            config.submission.open_reasons = tuple(reasons)
    return reasons
