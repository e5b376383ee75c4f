"""Closed or open division: what a `--config.KEY=VALUE` override may change in an MLPerf config.

An MLPerf config (`is_mlperf=True`, the `full` configs) is the closed-division benchmark. The
MLPerf Training Rules v0.7 (mlcommons/training_policies `training_rules.adoc`, section "Training
Loop > Hyperparameters") say:

    CLOSED: By default, the hyperparameters must be the same as the reference. [...] The following
    table lists the tunable hyperparameters for each allowed model,optimizer combination. The
    value of each tunable hyperparameter must meet the listed constraint.
    OPEN: Hyperparameters and optimizer may be freely changed.

The table is in two parts, keyed by the config keys that set each logged hyperparameter, each
entry with the rule text it comes from: `HARNESS` below, the harness settings the rules leave
free because they do not change the benchmark (parallelism, numerics, seed, data location, ...),
and each workload's own rows, its class's `closed_tunables` (`workloads/<name>/tunables.py`),
found through `tpubench.registry` (`WORKLOADS`); this module holds only the mechanism. Any other
override (data source, eval set size, quality target, model size, dataset, train_samples, eval
cadence, ...) makes the run open division, and so does a tunable value that breaks its
constraint: `apply()` then sets `is_mlperf=False`, `submission_division="open"` and records why
in `open_reasons`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import ml_collections

from tpubench import registry
from tpubench.errors import UsageError

RULES = "MLPerf Training Rules v0.7"

# Constraint: the final config -> None when it holds, else why it does not.
Check = Callable[[ml_collections.ConfigDict], "str | None"]


@dataclasses.dataclass(frozen=True)
class Tunable:
    """A config key closed division lets a submitter change, and the rule that allows it."""

    rule: str
    check: Check | None = None


def equals(key: str, value: Any, row: str) -> Check:
    """The constraint "`key` is `value`" (floats to 1e-9 relative) of the rules' table row
    `row`."""
    def check(c: ml_collections.ConfigDict) -> str | None:
        got = _get(c, key)
        if isinstance(value, float) and math.isclose(float(got), value, rel_tol=1e-9):
            return None
        return None if got == value else f"{key}={got!r}: must be {value!r} ({row})"
    return check


def one_of(key: str, values: tuple[Any, ...], row: str) -> Check:
    """The constraint "`key` is one of `values`" of the rules' table row `row`."""
    def check(c: ml_collections.ConfigDict) -> str | None:
        got = _get(c, key)
        return None if got in values else f"{key}={got!r}: must be one of {values} ({row})"
    return check


# The start of a Tunable's rule that quotes a row of the rules' hyperparameter table.
HP = f"{RULES}, Hyperparameters, table row "

# Settings of the harness, not of the benchmark: free in closed division for every workload.
GRAPH = (f"{RULES}, Graph Execution: \"CLOSED: Frameworks are free to optimize the non-weight "
         "parts of the computation graph provided that the changes are mathematically "
         "equivalent\" (how the same computation is split over devices and dispatched)")
_DATA_ORDER = (f"{RULES}, Training Data Order: \"arbitrary sharding, batching, and packing are "
               "allowed\"")
HARNESS: dict[str, Tunable] = {
    "run.mesh": Tunable(GRAPH),
    "run.dcn_mesh": Tunable(GRAPH),
    "run.parallelism": Tunable(GRAPH),
    "run.fsdp_min_size": Tunable(GRAPH),
    "run.steps_per_dispatch": Tunable(GRAPH),
    "run.scan_unroll": Tunable(GRAPH),
    "run.cpu_max_steps_in_flight": Tunable(GRAPH),
    "model.dtype": Tunable(
        f"{RULES}, Numerical formats: \"CLOSED: The numerical formats fp64, fp32, tf32, fp16, "
        "bfloat16, int8, uint8, int4, and uint4 are pre-approved for use\"",
        one_of("model.dtype", ("float32", "bfloat16", "float16", "float64"),
               "the pre-approved formats tpubench supports")),
    "run.seed": Tunable(
        f"{RULES}, Random numbers: \"Random number generators may be seeded from [...] "
        "Clock, System source of randomness [...]\" (any seed)"),
    "data.dir": Tunable(
        f"{RULES}, Data State at Start of Run: \"Data can start on any durable storage "
        "system\" (where the prepared data lives, not what it is)"),
    "eval.batch_size": Tunable(
        f"{_DATA_ORDER}; the eval set and its order are fixed, the batch it is cut into is not "
        "a hyperparameter"),
    "run.checkpoint_every_evals": Tunable(
        "not a rule of the benchmark: checkpoints change no computed value (their save time is "
        "on the clock)"),
    "run.checkpoint_keep": Tunable(
        "not a rule of the benchmark: how many checkpoints stay on disk"),
    "run.compile_cache": Tunable(
        f"{RULES}, Run Results: compile is part of the untimed model initialization; the cache "
        "changes no computed value"),
    "run.compile_cache_dir": Tunable(
        "not a rule of the benchmark: where compiled executables are cached"),
    "run.max_time_s": Tunable(
        "a budget, not a hyperparameter: a run stopped by it is not converged (status aborted)"),
    "run.max_train_samples": Tunable(
        "a budget, not a hyperparameter: a run stopped by it is not converged (status aborted)"),
    "run.profile_steps": Tunable(
        "not a rule of the benchmark, but a trace is not part of the benchmark's work",
        lambda c: None if not _get(c, "run.profile_steps") else (
            f"run.profile_steps={_get(c, 'run.profile_steps')!r}: a jax.profiler trace runs "
            "inside the timed region (its overhead is on the clock), so a profiled run is not an "
            "MLPerf result")),
    "submission.org": Tunable(f"{RULES}: log metadata (submission_org)"),
    "submission.platform": Tunable(f"{RULES}: log metadata (submission_platform)"),
    "submission.status": Tunable(
        "log metadata; the 0.7.0 checker allows cloud, onprem, preview, research",
        one_of("submission.status", ("cloud", "onprem", "preview", "research"),
               "0.7.0 compliance checker")),
}


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


def _get(c: ml_collections.ConfigDict, key: str) -> Any:
    node: Any = c
    for part in key.split("."):
        node = node[part]
    return node


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
            reasons.append(f"{key}={_get(config, key)!r} was asked for")
        elif tunable(config.workload, key) is None:
            reasons.append(
                f"{key}={_get(config, key)!r} changes the benchmark: closed division keeps the "
                "reference's data, model, quality target and training method")
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
