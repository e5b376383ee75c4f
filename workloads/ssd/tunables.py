"""What closed division lets a `--config.KEY=VALUE` override change in the SSD MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `ssd | sgd`, and the settings the rules leave free for this
benchmark, each with the rule it comes from. `tpubench.division` applies it, with the
harness-wide `HARNESS` table.
"""

from __future__ import annotations

from tpubench.mlperf.tunables import HP, RULES, Tunable, one_of

# the keys closed_ssd.yaml (training_0.7.0) logs and checks
CLOSED_TUNABLES: dict[str, Tunable] = {
    "data.global_batch_size": Tunable(HP + "ssd | sgd | global_batch_size | arbitrary "
                                        "constant"),
    "optimizer.learning_rate": Tunable(
        HP + "ssd | sgd | opt_base_learning_rate | arbitrary constant"),
    "schedule.warmup_steps": Tunable(
        HP + "ssd | sgd | opt_learning_rate_warmup_steps | integer >= 1 (checker)"),
    "schedule.warmup_factor": Tunable(
        HP + "ssd | sgd | opt_learning_rate_warmup_factor | integer >= 0 (checker)"),
    "schedule.decay_steps": Tunable(
        HP + "ssd | sgd | opt_learning_rate_decay_boundary_epochs | 40 * (1 + k / 10), "
        "50 * (1 + k / 10) epochs (checker), as steps at the config's batch"),
    "schedule.decay_boundary_epochs": Tunable(
        HP + "ssd | sgd | opt_learning_rate_decay_boundary_epochs (checker)"),
    "data.max_samples": Tunable(
        HP + "ssd | sgd | max_samples | 1 or 50",
        one_of("data.max_samples", (1, 50), "ssd | sgd | max_samples")),
    "model.bn_span": Tunable(HP + "ssd | sgd | model_bn_span | arbitrary constant"),
    "model.backbone_checkpoint": Tunable(
        f"{RULES}, Data State at Start of Run: where the reference's ImageNet-pretrained "
        "ResNet-34 file lives (train.py --pretrained-backbone), not what it is"),
}
