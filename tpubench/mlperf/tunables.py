"""Closed-division tunables: the rule a `--config.KEY=VALUE` override must keep, as data.

A `Tunable` is a config key that MLPerf Training v0.7's closed division lets a submitter change,
with the rule text that allows it and, where the rules' table gives one, its constraint. `HARNESS`
holds the harness settings free for every workload; each workload declares its own rows as its
class's `closed_tunables` (`workloads/<name>/tunables.py`), built with `equals` and `one_of`.
The decision (closed or open, and why) is `tpubench.division`'s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import ml_collections

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
        got = config_value(c, key)
        if isinstance(value, float) and math.isclose(float(got), value, rel_tol=1e-9):
            return None
        return None if got == value else f"{key}={got!r}: must be {value!r} ({row})"
    return check


def one_of(key: str, values: tuple[Any, ...], row: str) -> Check:
    """The constraint "`key` is one of `values`" of the rules' table row `row`."""
    def check(c: ml_collections.ConfigDict) -> str | None:
        got = config_value(c, key)
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
    "run.progress_every_s": Tunable(
        "not a rule of the benchmark: how often the loop prints a progress line (read one "
        "dispatch late, it never waits for the device and changes no computed value)"),
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
        lambda c: None if not config_value(c, "run.profile_steps") else (
            f"run.profile_steps={config_value(c, 'run.profile_steps')!r}: a jax.profiler trace "
            "runs inside the timed region (its overhead is on the clock), so a profiled run is "
            "not an MLPerf result")),
    "submission.org": Tunable(f"{RULES}: log metadata (submission_org)"),
    "submission.platform": Tunable(f"{RULES}: log metadata (submission_platform)"),
    "submission.status": Tunable(
        "log metadata; the v0.7 round's checker (mlcommons/logging tag 0.7.0, "
        "compliance_checker/0.7.0/common.yaml line 49) allows cloud, onprem, research "
        "(`preview` came with 0.7.1, after the round)",
        one_of("submission.status", ("cloud", "onprem", "research"),
               "compliance checker 0.7.0, common.yaml")),
}


def config_value(c: ml_collections.ConfigDict, key: str) -> Any:
    """The value at dotted `key` of config `c`."""
    node: Any = c
    for part in key.split("."):
        node = node[part]
    return node
