"""What closed division lets a `--config.KEY=VALUE` override change in the BERT MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `bert | lamb`, and the settings the rules leave free for this
benchmark, each with the rule it comes from. `tpubench.division` applies it, with the
harness-wide `HARNESS` table.
"""

from __future__ import annotations

from tpubench.mlperf.tunables import HP, Tunable

CLOSED_TUNABLES: dict[str, Tunable] = {
    "data.global_batch_size": Tunable(HP + "bert | lamb | global_batch_size | unconstrained"),
    "optimizer.learning_rate": Tunable(
        HP + "bert | lamb | opt_base_learning_rate | unconstrained"),
    "optimizer.epsilon": Tunable(HP + "bert | lamb | opt_epsilon | unconstrained"),
    "schedule.train_steps": Tunable(
        HP + "bert | lamb | opt_learning_rate_training_steps | unconstrained"),
    "schedule.warmup_steps": Tunable(
        HP + "bert | lamb | opt_learning_rate_warmup_steps, num_warmup_steps | "
        "unconstrained"),
    "schedule.start_warmup_step": Tunable(
        HP + "bert | lamb | start_warmup_step | unconstrained"),
    "optimizer.beta_1": Tunable(HP + "bert | lamb | opt_lamb_beta_1 | unconstrained"),
    "optimizer.beta_2": Tunable(HP + "bert | lamb | opt_lamb_beta_2 | unconstrained"),
    "optimizer.weight_decay": Tunable(
        HP + "bert | lamb | opt_lamb_weight_decay_rate | unconstrained"),
}
