"""What closed division lets a `--config.KEY=VALUE` override change in the Transformer MLPerf
config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `transformer | adam / lazy`, and the settings the rules leave free
for this benchmark, each with the rule it comes from. `tpubench.division` applies it,
with the harness-wide `HARNESS` table.
"""

from __future__ import annotations

from tpubench.mlperf.tunables import HP, RULES, Tunable, equals

CLOSED_TUNABLES: dict[str, Tunable] = {
    "data.global_batch_size": Tunable(
        HP + "transformer | adam / lazy | global_batch_size | arbitrary constant"),
    "optimizer.learning_rate": Tunable(
        HP + "transformer | adam / lazy | opt_base_learning_rate | Arbitrary constant"),
    "schedule.warmup_steps": Tunable(
        HP + "transformer | adam / lazy | opt_learning_rate_warmup_steps | arbitrary "
        "constant"),
    "optimizer.beta_1": Tunable(
        HP + "transformer | adam / lazy | opt_adam_beta_1 | arbitrary constant"),
    "optimizer.beta_2": Tunable(
        HP + "transformer | adam / lazy | opt_adam_beta_2 | arbitrary constant"),
    "optimizer.epsilon": Tunable(
        HP + "transformer | adam / lazy | opt_adam_epsilon* | fixed to reference (1e-9)",
        equals("optimizer.epsilon", 1e-9, "transformer | adam | opt_adam_epsilon")),
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
}
