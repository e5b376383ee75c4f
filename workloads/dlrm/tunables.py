"""What closed division lets a `--config.KEY=VALUE` override change in the DLRM MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `dlrm | sgd`, and the settings the rules leave free for this
benchmark, each with the rule it comes from. `tpubench.division` applies it, with the
harness-wide `HARNESS` table.
"""

from __future__ import annotations

import ml_collections

from tpubench.mlperf.tunables import GRAPH, HP, RULES, Tunable, equals


def _binary_only(c: ml_collections.ConfigDict) -> str | None:
    if c.data.source == "criteo_binary":
        return None
    return (f"data.source={c.data.source!r}: closed DLRM reads the reference's preprocessed "
            "binary files (criteo_binary); the TSV reader hashes ids as int(hex, 16) % rows "
            "instead of the reference's contiguous-id dictionary (facebookresearch/dlrm "
            "data_utils.py), so its run is open")


CLOSED_TUNABLES: dict[str, Tunable] = {
    "data.global_batch_size": Tunable(HP + "dlrm | sgd | global_batch_size | unconstrained"),
    "optimizer.sparse_embedding_update": Tunable(
        "an implementation choice, not a hyperparameter: the row-sparse and the dense "
        "embedding update are the same SGD step (workloads/dlrm/sparse.py; "
        "tests/test_dlrm_sparse.py compares the trajectories)"),
    "optimizer.learning_rate": Tunable(
        HP + "dlrm | sgd | opt_base_learning_rate, sgd_opt_base_learning_rate | "
        "unconstrained"),
    "schedule.warmup_steps": Tunable(
        HP + "dlrm | sgd | opt_learning_rate_warmup_steps | unconstrained"),
    "schedule.decay_start_step": Tunable(
        HP + "dlrm | sgd | lr_decay_start_steps | unconstrained"),
    "schedule.decay_steps": Tunable(
        HP + "dlrm | sgd | sgd_opt_learning_rate_decay_steps | unconstrained"),
    "schedule.decay_power": Tunable(
        HP + "dlrm | sgd | sgd_opt_learning_rate_decay_poly_power | 2",
        equals("schedule.decay_power", 2,
               "dlrm | sgd | sgd_opt_learning_rate_decay_poly_power")),
    "data.source": Tunable(
        f"{RULES}, Data State at Start of Run: \"The data may also be reformatted for the "
        "target system provided that the reformatting does not introduce new information\": "
        "the reference's binary files only. The TSV reader is not the reference's "
        "preprocessing (ids int(hex, 16) % rows, where facebookresearch/dlrm data_utils.py "
        "maps each id % 40M through a dictionary of contiguous ids; days read in order), so "
        "criteo_tsv runs open", _binary_only),
    "run.embedding_shard_min_rows": Tunable(GRAPH),
    "run.embedding_rows_multiple": Tunable(
        f"{GRAPH}; padding rows are never looked up (Data Representation: \"Mathematically "
        "equivalent padding\")"),
    "eval.inference_variant": Tunable(
        "read by `tpubench infer` only (dlrm-99 or dlrm-99.9); training never reads it"),
    "eval.inference_quantile_file": Tunable(
        "read by `tpubench infer` only (where the v0.7 reference's dist_quantile.txt is)"),
}
