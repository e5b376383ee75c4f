"""One generation of MiniGo at toy size (tests): 4 self-play games on a 5x5 board with 2
readouts, 2 train steps of 8, 2 evaluation games against a frozen random network.

    tpubench run minigo --config=smoke

Expected: status "aborted" after 1 generation (the budget) unless the toy net wins both games.
"""

import ml_collections

from workloads.minigo.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.config_name = "smoke"
    c.is_mlperf = False
    c.submission.division = "open"
    c.model.conv_width = 8
    c.model.fc_width = 8
    c.model.trunk_layers = 1
    c.schedule.steps_per_generation = 2
    c.data.board_size = 5
    c.data.komi = 0.5
    c.data.global_batch_size = 8
    c.data.games_per_generation = 4
    c.data.num_readouts = 2
    c.data.softpick_moves = 2
    c.eval.games = 2
    c.eval.num_readouts = 2
    c.eval.samples = 2
    c.run.max_generations = 1
    c.run.clear_page_cache = False
    return c
