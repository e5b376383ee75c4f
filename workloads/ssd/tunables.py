"""What closed division lets a `--config.KEY=VALUE` override change in the SSD MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `ssd | sgd`, and the settings the rules leave free for this
benchmark, each with the rule it comes from. `tpubench.division` applies it, with the
harness-wide `HARNESS` table.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_collections

from tpubench.config import steps_for_epochs
from tpubench.mlperf.tunables import HP, RULES, Tunable, config_value, one_of

_ROW = "ssd | sgd | "
# The reference's boundary epochs (train.py --lr-decay-schedule 40 50) and the rule's form:
# "[40, 50] * (1 + k/10) for some integer k" (the table row; the 0.7.0 checker,
# compliance_checker/0.7.0/closed_ssd.yaml, checks each epoch's own k:
# is_integer(10 * (v[0] / 40.0 - 1)), is_integer(10 * (v[1] / 50.0 - 1)))
BOUNDARY_EPOCHS = (40, 50)


def decay_steps(c: ml_collections.ConfigDict) -> tuple[int, ...]:
    """The steps that start `schedule.decay_boundary_epochs` at the config's batch (one epoch =
    ceil(train_samples / batch) steps: the reference's DataLoader keeps the last partial batch)."""
    return tuple(steps_for_epochs(e, c.data.train_samples, c.data.global_batch_size)
                 for e in c.schedule.decay_boundary_epochs)


def derive(c: ml_collections.ConfigDict, changed: Sequence[str]) -> list[str]:
    """After overrides `changed`: the decay steps follow the boundary epochs at the new batch
    (or train_samples, or epochs), unless `schedule.decay_steps` was overridden too."""
    inputs = {"data.global_batch_size", "data.train_samples", "schedule.decay_boundary_epochs"}
    if "schedule.decay_steps" in changed or not inputs & set(changed):
        return []
    steps = decay_steps(c)
    if steps == tuple(c.schedule.decay_steps):
        return []
    c.schedule.decay_steps = steps
    return ["schedule.decay_steps"]


def _integer_at_least(key: str, low: int, row: str):
    def check(c: ml_collections.ConfigDict) -> str | None:
        v = config_value(c, key)
        if isinstance(v, bool) or float(v) != int(v) or int(v) < low:
            return f"{key}={v!r}: must be an integer >= {low} ({row})"
        return None
    return check


def _boundary_epochs(c: ml_collections.ConfigDict) -> str | None:
    got = tuple(c.schedule.decay_boundary_epochs)
    if len(got) != len(BOUNDARY_EPOCHS):
        ks = set()
    else:
        ks = {round(10 * (e / b - 1), 9) for e, b in zip(got, BOUNDARY_EPOCHS, strict=True)}
    if len(ks) == 1 and float(ks.pop()).is_integer():
        return None
    return (f"schedule.decay_boundary_epochs={got!r}: must be [40, 50] * (1 + k/10) for one "
            f"integer k ({_ROW}opt_learning_rate_decay_boundary_epochs)")


def _steps_match_epochs(c: ml_collections.ConfigDict) -> str | None:
    want = decay_steps(c)
    if tuple(c.schedule.decay_steps) == want:
        return None
    return (f"schedule.decay_steps={tuple(c.schedule.decay_steps)!r}: the lr must decay where the "
            f"log says it does, at boundary epochs {tuple(c.schedule.decay_boundary_epochs)!r} = "
            f"steps {want!r} at global batch {c.data.global_batch_size} (leave decay_steps to "
            "the config: it follows the batch and the boundary epochs)")


# the keys closed_ssd.yaml (training_0.7.0) logs and checks
CLOSED_TUNABLES: dict[str, Tunable] = {
    "data.global_batch_size": Tunable(HP + _ROW + "global_batch_size | arbitrary constant"),
    "optimizer.learning_rate": Tunable(HP + _ROW + "opt_base_learning_rate | unconstrained"),
    "schedule.warmup_steps": Tunable(
        HP + _ROW + "opt_learning_rate_warmup_steps | integer >= 1",
        _integer_at_least("schedule.warmup_steps", 1, _ROW + "opt_learning_rate_warmup_steps")),
    "schedule.warmup_factor": Tunable(
        HP + _ROW + "opt_learning_rate_warmup_factor | Integer >= 0",
        _integer_at_least("schedule.warmup_factor", 0, _ROW + "opt_learning_rate_warmup_factor")),
    "schedule.decay_steps": Tunable(
        HP + _ROW + "opt_learning_rate_decay_boundary_epochs, as steps at the config's batch "
        "(derived: `derive`)", _steps_match_epochs),
    "schedule.decay_boundary_epochs": Tunable(
        HP + _ROW + "opt_learning_rate_decay_boundary_epochs | [40, 50] * (1 + k/10) for some "
        "integer k", _boundary_epochs),
    "optimizer.weight_decay": Tunable(HP + _ROW + "opt_weight_decay | arbitrary constant"),
    "data.max_samples": Tunable(
        HP + _ROW + "max_samples | 1 or 50",
        one_of("data.max_samples", (1, 50), _ROW + "max_samples")),
    "model.bn_span": Tunable(HP + _ROW + "model_bn_span | integer >= 1 (0 here: the global "
                             "batch, logged as its size)"),
    "model.backbone_checkpoint": Tunable(
        f"{RULES}, Data State at Start of Run: where the reference's ImageNet-pretrained "
        "ResNet-34 file lives (train.py --pretrained-backbone), not what it is"),
}
