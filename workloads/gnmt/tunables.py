"""What closed division lets a `--config.KEY=VALUE` override change in the GNMT MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `gnmt | adam`, and the settings the rules leave free for this
benchmark, each with the rule it comes from. `tpubench.division` applies it, with the
harness-wide `HARNESS` table. The two `alt_*_func` rows have no key of their own: the rules
switch them with the remain and warmup steps, which are here.
"""

from __future__ import annotations

from tpubench.mlperf.tunables import HP, RULES, Tunable, equals

_ROW = "gnmt | adam | "

CLOSED_TUNABLES: dict[str, Tunable] = {
    "data.global_batch_size": Tunable(HP + _ROW + "global_batch_size | unconstrained"),
    "optimizer.learning_rate": Tunable(HP + _ROW + "opt_base_learning_rate | unconstrained"),
    "schedule.warmup_steps": Tunable(
        HP + _ROW + "opt_learning_rate_warmup_steps | unconstrained (0 disables the warmup: "
        "opt_learning_rate_alt_warmup_func)"),
    "schedule.remain_steps": Tunable(
        HP + _ROW + "opt_learning_rate_remain_steps | unconstrained (1.0 disables the decay: "
        "opt_learning_rate_alt_decay_func)"),
    "schedule.decay_interval": Tunable(
        HP + _ROW + "opt_learning_rate_decay_interval | unconstrained"),
    "schedule.decay_steps": Tunable(
        HP + _ROW + "opt_learning_rate_decay_steps* | fixed to reference (4)",
        equals("schedule.decay_steps", 4, _ROW + "opt_learning_rate_decay_steps")),
    "schedule.decay_factor": Tunable(
        HP + _ROW + "opt_learning_rate_decay_factor* | fixed to reference (0.5)",
        equals("schedule.decay_factor", 0.5, _ROW + "opt_learning_rate_decay_factor")),
    "data.max_len": Tunable(
        HP + _ROW + "max_sequence_length | unconstrained: \"May either drop or clip all "
        "sequences to this length\" (train.py --max-length-train; dropped here)"),
    "data.cache_dir": Tunable(
        f"{RULES}, Data State at Start of Run: where the prepared (tokenized) data is cached, "
        "not what it is"),
}
