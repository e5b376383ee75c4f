"""The MiniGo mini against a frozen network (the reference's kind of target: a fixed model):
5x5, the `mini` config's self-play and training, 20 evaluation games (10 per colour) against
a frozen untrained network of another seed (`eval.target_seed`), target win rate 0.8.

    tpubench run minigo --config=mini_frozen

Why not GNU Go: MEASURED_GNUGO
Measured here: MEASURED_FROZEN
"""

import ml_collections

from workloads.minigo.configs import mini


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    c.config_name = "mini_frozen"
    c.eval.opponent = "model"
    c.eval.target_file = ""
    c.eval.target_seed = 1
    c.eval.games = 20
    c.eval.samples = 20
    c.eval.target_value = 0.8
    return c
