"""The MiniGo mini: 5x5 Go (komi 0.5) on a CPU, the target a real engine: GNU Go level 0 over
GTP, half of the 10 evaluation games with each colour; win rate >= 0.5 to stop.

    tpubench run minigo --config=mini

Same network code, loss and generation loop as the full config; smaller net (32 filters, 3
blocks), Gumbel MuZero search with 16 simulations (PUCT with so few readouts barely improves
on the prior: tests/test_minigo.py), 128 self-play games per generation, 16 steps of 256 on the
last 4 generations.

Measured (see the report of the run below; the machine was shared, so only the generation
counts and win rates are meaningful): MEASURED_CURVE
"""

import ml_collections

from workloads.minigo.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.config_name = "mini"
    c.is_mlperf = False
    c.submission.division = "open"
    c.model.conv_width = 32
    c.model.fc_width = 32
    c.model.trunk_layers = 3
    c.optimizer.learning_rate = 0.02
    c.schedule.lr_rates = (0.02,)
    c.schedule.lr_boundaries = ()
    c.schedule.steps_per_generation = 16
    c.data.board_size = 5
    c.data.komi = 0.5
    c.data.global_batch_size = 256
    c.data.games_per_generation = 128
    c.data.num_readouts = 16
    c.data.search = "gumbel"
    c.data.softpick_moves = 4
    c.data.window_generations = 4
    c.eval.opponent = "gnugo"
    c.eval.gnugo_level = 0
    c.eval.games = 10
    c.eval.num_readouts = 16
    c.eval.samples = 10
    c.run.max_generations = 40
    c.run.max_time_s = 600.0
    return c
