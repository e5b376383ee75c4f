"""Closed or open division: what a `--config.KEY=VALUE` override may change in an MLPerf config.

An MLPerf config (`is_mlperf=True`, the `full` configs) is the closed-division benchmark. The
MLPerf Training Rules v0.7 (mlcommons/training_policies `training_rules.adoc`, section "Training
Loop > Hyperparameters") say:

    CLOSED: By default, the hyperparameters must be the same as the reference. [...] The following
    table lists the tunable hyperparameters for each allowed model,optimizer combination. The
    value of each tunable hyperparameter must meet the listed constraint.
    OPEN: Hyperparameters and optimizer may be freely changed.

`TUNABLE` below is that table (the rows of the four benchmarks tpubench implements), keyed by the
config keys that set each logged hyperparameter, plus the harness settings that the rules leave
free because they do not change the benchmark (parallelism, numerics, seed, data location, ...),
each with the rule text it comes from. Any other override (data source, eval set size, quality
target, model size, dataset, train_samples, eval cadence, ...) makes the run open division, and so
does a tunable value that breaks its constraint: `apply()` then sets `is_mlperf=False`,
`submission_division="open"` and records why in `open_reasons`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import Any

import ml_collections

from tpubench.errors import UsageError
from tpubench.nn import convolution

RULES = "MLPerf Training Rules v0.7"

# Constraint: the final config -> None when it holds, else why it does not.
Check = Callable[[ml_collections.ConfigDict], "str | None"]


@dataclasses.dataclass(frozen=True)
class Tunable:
    """A config key closed division lets a submitter change, and the rule that allows it."""

    rule: str
    check: Check | None = None


def _equals(key: str, value: Any, row: str) -> Check:
    def check(c: ml_collections.ConfigDict) -> str | None:
        got = _get(c, key)
        if isinstance(value, float) and math.isclose(float(got), value, rel_tol=1e-9):
            return None
        return None if got == value else f"{key}={got!r}: must be {value!r} ({row})"
    return check


def _one_of(key: str, values: tuple[Any, ...], row: str) -> Check:
    def check(c: ml_collections.ConfigDict) -> str | None:
        got = _get(c, key)
        return None if got in values else f"{key}={got!r}: must be one of {values} ({row})"
    return check


def _weight_decay(key: str, row: str) -> Check:
    def check(c: ml_collections.ConfigDict) -> str | None:
        wd = float(_get(c, key))
        n = math.log2(wd / 1e-4) if wd > 0 else 0.5
        ok = abs(n - round(n)) < 1e-9
        return None if ok else f"{key}={wd!r}: must be 0.0001 * 2^N for an integer N ({row})"
    return check


def _resnet_momentum(c: ml_collections.ConfigDict) -> str | None:
    m, name, gbs = c.optimizer.momentum, c.optimizer.name, c.data.global_batch_size
    if name == "sgd" and not math.isclose(m, 0.9):
        return (f"optimizer.momentum={m!r}: SGD momentum must be 0.9 "
                "(resnet | sgd | sgd_opt_momentum)")
    if name == "lars" and gbs < 32768 and not math.isclose(m, 0.9):
        return (f"optimizer.momentum={m!r} at global_batch_size={gbs}: LARS momentum must be 0.9 "
                "for batch < 32k (resnet | lars | lars_opt_momentum)")
    return None


def _resnet_sgd_lr(c: ml_collections.ConfigDict) -> str | None:
    if c.optimizer.name != "sgd":
        return None
    k = c.optimizer.learning_rate / 0.001
    if abs(k - round(k)) < 1e-6:
        return None
    return (f"optimizer.learning_rate={c.optimizer.learning_rate!r}: SGD base lr must be "
            "0.001 * k for an integer k (resnet | sgd | sgd_opt_base_learning_rate)")


def _resnet_sgd_warmup(c: ml_collections.ConfigDict) -> str | None:
    """SGD warmup in whole epochs: schedule.warmup_steps a multiple of the steps per epoch."""
    w = c.schedule.warmup_steps
    per_epoch = math.ceil(c.data.train_samples / c.data.global_batch_size)
    if c.optimizer.name != "sgd" or (w >= 0 and w % per_epoch == 0):
        return None
    return (f"schedule.warmup_steps={w!r} ({w / per_epoch:g} epochs of {per_epoch} steps): SGD "
            "warmup must be an integer number of epochs >= 0 "
            "(resnet | sgd | opt_learning_rate_warmup_epochs)")


_HP = f"{RULES}, Hyperparameters, table row "

# Settings of the harness, not of the benchmark: free in closed division for every workload.
_GRAPH = (f"{RULES}, Graph Execution: \"CLOSED: Frameworks are free to optimize the non-weight "
          "parts of the computation graph provided that the changes are mathematically "
          "equivalent\" (how the same computation is split over devices and dispatched)")
_DATA_ORDER = (f"{RULES}, Training Data Order: \"arbitrary sharding, batching, and packing are "
               "allowed\"")
HARNESS: dict[str, Tunable] = {
    "run.mesh": Tunable(_GRAPH),
    "run.dcn_mesh": Tunable(_GRAPH),
    "run.parallelism": Tunable(_GRAPH),
    "run.fsdp_min_size": Tunable(_GRAPH),
    "run.steps_per_dispatch": Tunable(_GRAPH),
    "run.scan_unroll": Tunable(_GRAPH),
    "run.cpu_max_steps_in_flight": Tunable(_GRAPH),
    "model.dtype": Tunable(
        f"{RULES}, Numerical formats: \"CLOSED: The numerical formats fp64, fp32, tf32, fp16, "
        "bfloat16, int8, uint8, int4, and uint4 are pre-approved for use\"",
        _one_of("model.dtype", ("float32", "bfloat16", "float16", "float64"),
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
        _one_of("submission.status", ("cloud", "onprem", "preview", "research"),
                "0.7.0 compliance checker")),
}

_RESNET = "resnet | lars/sgd | "
WORKLOADS: dict[str, dict[str, Tunable]] = {
    "resnet": {
        "model.conv_impl": Tunable(_GRAPH, _one_of("model.conv_impl", convolution.IMPLS,
                                                   "tpubench/nn/convolution.py: same convolution")),
        "data.uint8_pixels": Tunable(
            f"{RULES}, Numerical formats: \"CLOSED: The numerical formats [...] uint8 [...] are "
            "pre-approved for use\" (the resized pixels sent as uint8 and normalised on device, "
            "or normalised as float32 on the host)"),
        "data.global_batch_size": Tunable(
            _HP + "resnet | lars | global_batch_size | unconstrained; "
            "resnet | sgd | global_batch_size | arbitrary constant"),
        "model.bn_span": Tunable(
            _HP + "resnet | sgd | model_bn_span | arbitrary constant; Hyperparameter Borrowing: "
            "\"they may change batch size (local batch size, global batch size, batchnorm span)\""),
        "model.label_smoothing": Tunable(
            _HP + "resnet | lars/sgd | label smoothing** | 0 or 0.1",
            _one_of("model.label_smoothing", (0.0, 0.1), _RESNET + "label smoothing | 0 or 0.1")),
        "optimizer.name": Tunable(
            _HP + "resnet | lars/sgd | opt_name | \"lars\" or \"sgd\"",
            _one_of("optimizer.name", ("lars", "sgd"), _RESNET + "opt_name")),
        "optimizer.learning_rate": Tunable(
            _HP + "resnet | lars | lars_opt_base_learning_rate | arbitrary constant; "
            "resnet | sgd | sgd_opt_base_learning_rate | 0.001 * k where k is an integer",
            _resnet_sgd_lr),
        "schedule.end_learning_rate": Tunable(
            _HP + "resnet | lars | lars_opt_end_learning_rate* | fixed to reference; "
            "resnet | sgd | sgd_opt_end_learning_rate | 10^-4",
            _equals("schedule.end_learning_rate", 1e-4, _RESNET + "end learning rate 1e-4")),
        "schedule.decay_power": Tunable(
            _HP + "resnet | lars/sgd | *_opt_learning_rate_decay_poly_power | 2 (fixed)",
            _equals("schedule.decay_power", 2.0, _RESNET + "decay poly power 2")),
        "schedule.warmup_steps": Tunable(
            _HP + "resnet | lars | lars_opt_learning_rate_warmup_epochs | arbitrary constant; "
            "resnet | sgd | opt_learning_rate_warmup_epochs | integer >= 0",
            _resnet_sgd_warmup),
        "schedule.train_steps": Tunable(
            _HP + "resnet | lars | lars_opt_learning_rate_decay_steps | unconstrained; "
            "resnet | sgd | sgd_opt_learning_rate_decay_steps | integer >= 0"),
        "optimizer.momentum": Tunable(
            _HP + "resnet | lars | lars_opt_momentum | 0.9 for batch<32k, otherwise arbitrary "
            "constant; resnet | sgd | sgd_opt_momentum | 0.9",
            _resnet_momentum),
        "optimizer.weight_decay": Tunable(
            _HP + "resnet | lars/sgd | *_opt_weight_decay | (0.0001 * 2 ^ N) where N is any "
            "integer",
            _weight_decay("optimizer.weight_decay", _RESNET + "weight decay")),
        "optimizer.epsilon": Tunable(
            _HP + "resnet | lars | lars_epsilon* | Fixed to reference (0)",
            _equals("optimizer.epsilon", 0.0, "resnet | lars | lars_epsilon")),
    },
    "bert": {
        "data.global_batch_size": Tunable(_HP + "bert | lamb | global_batch_size | unconstrained"),
        "optimizer.learning_rate": Tunable(
            _HP + "bert | lamb | opt_base_learning_rate | unconstrained"),
        "optimizer.epsilon": Tunable(_HP + "bert | lamb | opt_epsilon | unconstrained"),
        "schedule.train_steps": Tunable(
            _HP + "bert | lamb | opt_learning_rate_training_steps | unconstrained"),
        "schedule.warmup_steps": Tunable(
            _HP + "bert | lamb | opt_learning_rate_warmup_steps, num_warmup_steps | "
            "unconstrained"),
        "schedule.start_warmup_step": Tunable(
            _HP + "bert | lamb | start_warmup_step | unconstrained"),
        "optimizer.beta_1": Tunable(_HP + "bert | lamb | opt_lamb_beta_1 | unconstrained"),
        "optimizer.beta_2": Tunable(_HP + "bert | lamb | opt_lamb_beta_2 | unconstrained"),
        "optimizer.weight_decay": Tunable(
            _HP + "bert | lamb | opt_lamb_weight_decay_rate | unconstrained"),
    },
    "dlrm": {
        "data.global_batch_size": Tunable(_HP + "dlrm | sgd | global_batch_size | unconstrained"),
        "optimizer.sparse_embedding_update": Tunable(
            "an implementation choice, not a hyperparameter: the row-sparse and the dense "
            "embedding update are the same SGD step (workloads/dlrm/sparse.py; "
            "tests/test_dlrm_sparse.py compares the trajectories)"),
        "optimizer.learning_rate": Tunable(
            _HP + "dlrm | sgd | opt_base_learning_rate, sgd_opt_base_learning_rate | "
            "unconstrained"),
        "schedule.warmup_steps": Tunable(
            _HP + "dlrm | sgd | opt_learning_rate_warmup_steps | unconstrained"),
        "schedule.decay_start_step": Tunable(
            _HP + "dlrm | sgd | lr_decay_start_steps | unconstrained"),
        "schedule.decay_steps": Tunable(
            _HP + "dlrm | sgd | sgd_opt_learning_rate_decay_steps | unconstrained"),
        "schedule.decay_power": Tunable(
            _HP + "dlrm | sgd | sgd_opt_learning_rate_decay_poly_power | 2",
            _equals("schedule.decay_power", 2,
                    "dlrm | sgd | sgd_opt_learning_rate_decay_poly_power")),
        "data.source": Tunable(
            f"{RULES}, Data State at Start of Run: \"The data may also be reformatted for the "
            "target system provided that the reformatting does not introduce new information\" "
            "(the same Criteo 1TB days, as binary or TSV)",
            _one_of("data.source", ("criteo_binary", "criteo_tsv"), "Criteo 1TB formats")),
        "run.embedding_shard_min_rows": Tunable(_GRAPH),
        "run.embedding_rows_multiple": Tunable(
            f"{_GRAPH}; padding rows are never looked up (Data Representation: \"Mathematically "
            "equivalent padding\")"),
        "eval.inference_variant": Tunable(
            "read by `tpubench infer` only (dlrm-99 or dlrm-99.9); training never reads it"),
        "eval.inference_quantile_file": Tunable(
            "read by `tpubench infer` only (where the v0.7 reference's dist_quantile.txt is)"),
    },
    "transformer": {
        "data.global_batch_size": Tunable(
            _HP + "transformer | adam / lazy | global_batch_size | arbitrary constant"),
        "optimizer.learning_rate": Tunable(
            _HP + "transformer | adam / lazy | opt_base_learning_rate | Arbitrary constant"),
        "schedule.warmup_steps": Tunable(
            _HP + "transformer | adam / lazy | opt_learning_rate_warmup_steps | arbitrary "
            "constant"),
        "optimizer.beta_1": Tunable(
            _HP + "transformer | adam / lazy | opt_adam_beta_1 | arbitrary constant"),
        "optimizer.beta_2": Tunable(
            _HP + "transformer | adam / lazy | opt_adam_beta_2 | arbitrary constant"),
        "optimizer.epsilon": Tunable(
            _HP + "transformer | adam / lazy | opt_adam_epsilon* | fixed to reference (1e-9)",
            _equals("optimizer.epsilon", 1e-9, "transformer | adam | opt_adam_epsilon")),
        "data.max_len": Tunable(
            f"{RULES}, Data Representation: \"CLOSED: For benchmarks with sequence inputs, you "
            "may choose a length N and either truncate all examples to length N or throw out all "
            "examples which exceed length N. [...] This may only be done on the training set\""),
        "data.dir": Tunable(
            f"{RULES}, Data State at Start of Run: \"Data can start on any durable storage "
            "system\""),
        "data.cache_dir": Tunable("where the prepared vocabulary is cached, not what it is"),
        "data.vocab_file": Tunable(
            f"{RULES}, Other Uses of Data: \"Input encoding data, such as language vocabulary "
            "[...] may [be] used during pre-processing\"; the reference loads the published "
            "vocab.ende.32768 when given it (utils/tokenizer.py)"),
    },
    "ssd": {  # the keys closed_ssd.yaml (training_0.7.0) logs and checks
        "data.global_batch_size": Tunable(_HP + "ssd | sgd | global_batch_size | arbitrary "
                                          "constant"),
        "optimizer.learning_rate": Tunable(
            _HP + "ssd | sgd | opt_base_learning_rate | arbitrary constant"),
        "schedule.warmup_steps": Tunable(
            _HP + "ssd | sgd | opt_learning_rate_warmup_steps | integer >= 1 (checker)"),
        "schedule.warmup_factor": Tunable(
            _HP + "ssd | sgd | opt_learning_rate_warmup_factor | integer >= 0 (checker)"),
        "schedule.decay_steps": Tunable(
            _HP + "ssd | sgd | opt_learning_rate_decay_boundary_epochs | 40 * (1 + k / 10), "
            "50 * (1 + k / 10) epochs (checker), as steps at the config's batch"),
        "schedule.decay_boundary_epochs": Tunable(
            _HP + "ssd | sgd | opt_learning_rate_decay_boundary_epochs (checker)"),
        "data.max_samples": Tunable(
            _HP + "ssd | sgd | max_samples | 1 or 50",
            _one_of("data.max_samples", (1, 50), "ssd | sgd | max_samples")),
        "model.bn_span": Tunable(_HP + "ssd | sgd | model_bn_span | arbitrary constant"),
        "model.backbone_checkpoint": Tunable(
            f"{RULES}, Data State at Start of Run: where the reference's ImageNet-pretrained "
            "ResNet-34 file lives (train.py --pretrained-backbone), not what it is"),
    },
    "maskrcnn": {
        "model.backbone_checkpoint": Tunable(
            f"{RULES}, Data State at Start of Run: where the reference's ImageNet-pretrained "
            "ResNet-50 file lives (maskrcnn-benchmark MODEL.WEIGHT), not what it is"),
        "data.annotations_dir": Tunable(
            f"{RULES}, Data State at Start of Run: \"Data can start on any durable storage "
            "system\" (where COCO's instances JSON files live, not what they are)"),
    },
}

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
