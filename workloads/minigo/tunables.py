"""What closed division lets a `--config.KEY=VALUE` override change in the MiniGo MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `minigo | sgd`, and the settings the rules leave free for this
benchmark, each with the rule it comes from. `tpubench.division` applies it, with the
harness-wide `HARNESS` table. (A closed MiniGo run is refused before compute until its v0.7
loop is built: `MiniGoWorkload.closed_requirements`.)
"""

from __future__ import annotations

import ml_collections

from tpubench.mlperf.tunables import HP, RULES, Tunable, config_value, equals

_ROW = "minigo | sgd | "
MIN_GAMES = 8192  # ml_perf/train_loop.py min_games_per_generation; closed_minigo.yaml


def _batch(c: ml_collections.ConfigDict) -> str | None:
    v = config_value(c, "data.global_batch_size")
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return None
    return f"data.global_batch_size={v!r}: must be an integer > 0 ({_ROW}train_batch_size)"


def _games(c: ml_collections.ConfigDict) -> str | None:
    v = int(c.data.games_per_generation)
    if v >= MIN_GAMES:
        return None
    return (f"data.games_per_generation={v}: must be >= {MIN_GAMES} "
            f"({_ROW}actual_selfplay_games_per_generation | integer >= 8192)")


CLOSED_TUNABLES: dict[str, Tunable] = {
    "data.global_batch_size": Tunable(HP + _ROW + "train_batch_size | integer > 0", _batch),
    "schedule.lr_boundaries": Tunable(HP + _ROW + "lr_boundaries | unconstrained"),
    "schedule.lr_rates": Tunable(HP + _ROW + "lr_rates | unconstrained"),
    "data.games_per_generation": Tunable(
        HP + _ROW + "actual_selfplay_games_per_generation | integer >= 8192 "
        "(min_selfplay_games_per_generation); not a hyperparameter", _games),
    "data.min_games_per_generation": Tunable(
        HP + _ROW + "min_selfplay_games_per_generation* | fixed to reference (8192)",
        equals("data.min_games_per_generation", MIN_GAMES,
               _ROW + "min_selfplay_games_per_generation")),
    "eval.target_file": Tunable(
        f"{RULES}, Data State at Start of Run: where the reference's target model (converted "
        "to .npz) lives, not what it is"),
}
