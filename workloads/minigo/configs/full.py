"""MiniGo, the MLPerf v0.7 closed-division setup (19x19; is_mlperf=True).

    tpubench run minigo --config=full --config.submission.division=open  # not closed yet

Sources: ../shared/docs/WORKLOADS.md (the v0.7 MiniGo row and its hyperparameter line) and the
reference, mlcommons/training reinforcement/tensorflow/minigo: the network's shape
(`ml_perf/flags/19/architecture.flags`: conv_width 64, fc_width 64, trunk_layers 6,
value_cost_weight as WORKLOADS.md states it), training (`train.flags`: train_batch_size 4096,
lr_rates / lr_boundaries, l2_strength 1e-4, SGD momentum 0.9 in `dual_net.py`), self-play
(`selfplay.flags`: 800 readouts, Dirichlet alpha 0.03, noise mix 0.25; softpick for the first
N*N//12 moves: `softpick_move_cutoff` in `strategies.py`), the loop
(`ml_perf/train_loop.py`: window_size 5 generations, examples_per_generation 131072, i.e. 32
steps of 4096) and `closed_minigo.yaml` (>= 8,192 games per generation). The target is the
reference's frozen target model, converted to an .npz (`eval.target_file`); win rate >= 0.50
(`tpubench/mlperf/rules.py`). Not run here (CPU only): checked abstractly and by `tpubench fit`.
Not implemented from the reference: playing 75% of self-play moves with 80 readouts ("fast
play"), resignation, and holdout validation.

Not yet the v0.7 reference's loop (issue 34): 17 AlphaGo Zero input planes (v0.7: 13 `mlperf07`),
32 steps a generation (v0.7: one pass over 0.3 of the last 5 generations), a random start (v0.7:
its bootstrap checkpoint). So a closed run stops before any compute and says why
(`MiniGoWorkload.closed_requirements`); `--config.submission.division=open` runs it as open.
"""

import ml_collections

from tpubench.config import base_config
from tpubench.mlperf import rules

# What a closed run needs besides the code (`tpubench list` prints it; the run checks it).
CLOSED_NEEDS = (
    "not runnable closed yet: the v0.7 MiniGo loop (13 mlperf07 planes, the "
    "0.3-of-5-generations window, the bootstrap and target models) is not built "
    "(issue 34); runs open with --config.submission.division=open"
)


def get_config() -> ml_collections.ConfigDict:
    c = base_config()
    c.workload = "minigo"
    c.config_name = "full"
    c.is_mlperf = True
    c.submission.division = "closed"

    c.model.conv_width = 64
    c.model.fc_width = 64
    c.model.trunk_layers = 6
    c.model.value_cost_weight = 0.5
    c.model.l2_strength = 1e-4

    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.9
    c.optimizer.learning_rate = 0.16  # the peak of lr_rates
    c.schedule.lr_rates = (0.016, 0.16, 0.016, 0.0016)
    c.schedule.lr_boundaries = (128, 10000, 20000)
    c.schedule.steps_per_generation = 32

    c.data.dataset = "selfplay"
    c.data.source = "selfplay"
    c.data.board_size = 19
    c.data.komi = 7.5
    c.data.global_batch_size = 4096  # MLPerf's train_batch_size
    c.data.games_per_generation = 8192
    c.data.min_games_per_generation = 8192
    c.data.num_readouts = 800
    c.data.search = "puct"  # the reference's PUCT search (play.SearchSettings)
    c.data.dirichlet_alpha = 0.03
    c.data.noise_mix = 0.25
    c.data.softpick_moves = 19 * 19 // 12
    c.data.window_generations = 5
    c.data.random_rotation = True  # train.py: random_rotation=True (symmetry.py)

    c.eval.opponent = "model"
    c.eval.target_file = ""
    c.eval.target_seed = 1
    c.eval.games = 100
    c.eval.num_readouts = 100  # WORKLOADS.md: 100 readouts in evaluation games
    c.eval.gnugo_level = 0
    c.eval.target_metric = "win_rate"
    c.eval.target_value = rules.target_thresholds("minigo")["quality"]
    c.eval.batch_size = 1
    c.eval.samples = 100

    c.run.max_generations = 1000
    return c
