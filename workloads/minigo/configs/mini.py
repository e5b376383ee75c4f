"""The MiniGo mini against GNU Go: 5x5 Go (komi 0.5) on a CPU, the target a real engine, GNU Go
level 0 over GTP, half of the 10 evaluation games with each colour; win rate >= 0.5 to stop.
It does NOT converge: the mini to run is `mini_frozen` (target provisional here).

    tpubench run minigo --config=mini      # needs pip install -e '.[go]' and the gnugo binary

Same network code, loss and generation loop as the full config; smaller net (32 filters, 3
blocks), Gumbel MuZero search with 16 simulations, 128 self-play games per generation, 64 steps
of 256 on the last 4 generations, each example under a random board symmetry (the reference's
`random_rotation`, workloads/minigo/symmetry.py).

Measured (issue 14, session 2026-12-02c; `python probes/minigo_learning.py
/tmp/go_gnugo_s0.jsonl 14 1 10 run.seed=0 --vs=gnugo --save=/tmp/go_nets_s0`, 10 games a
generation against GNU Go level 0, seed 0): win rate by generation 1-10: 0.0, 0.0, 0.0, 0.0,
0.0, 0.0, 0.0, 0.0, 0.1, 0.0. The same nets against the frozen untrained net (mini_frozen's
evaluation, 40 games): 0.600 at generation 1, 0.900 at 8, 0.950 at 10: the net learns, GNU Go
stays far ahead. Cost: 46 CPU-seconds a generation (2.2-4.1 min of wall time at load average
14-18 on the 2 cores).
Why 0.5 is out of reach: GNU Go level 0 wins every 5x5 game as black by the whole board
(B+24.5), so our net cannot win as white and must win all 5 of its black games for a 0.5.
Self-play learning curves and the runs before issue 14: workloads/minigo/README.md.
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
    c.schedule.steps_per_generation = 64  # issue 14: 16 left the net all but untrained
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
    c.eval.target_provisional = True  # not reached in 10 generations (above); mini_frozen is
    c.run.max_generations = 40
    c.run.max_time_s = 600.0
    return c
