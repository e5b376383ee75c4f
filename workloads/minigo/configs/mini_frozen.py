"""The MiniGo mini against a frozen network (the reference's kind of target: a fixed model):
5x5, the `mini` config's self-play and training, 20 evaluation games (10 per colour) against
a frozen untrained network of another seed (`eval.target_seed`), target win rate 0.7.

    tpubench run minigo --config=mini_frozen

Why not GNU Go: the `mini` config stays at win rate 0.0-0.1 for 14 generations (10 min).
Measured (2-core machine shared by 8 jobs; clock figures are upper bounds):
  baseline: the untrained network (generation 0) wins 0.45 (benchmarks/minigo_baseline.py)
  seed 0, win rate by generation (clock s): 0.65 (63), 0.70 (131), 0.75 (201), 0.70 (265),
    0.65 (306), 0.75 (353), 0.70 (399), 0.55 (464), 0.65 (535), 0.65 (606)
  seed 1: 0.65 (64), 0.70 (151)
The target 0.7 is reached at generation 2 on both seeds (init ~50-110 s untimed, then ~2.5
min); the curve plateaus around 0.65-0.75 (20 games: +-0.1 is noise), so the margin over the
baseline is real but the target sits AT the plateau, not below it: a weak mini.
These figures predate the batch-norm fix in model.py (trunk BN gained a scale, the heads' BN
lost its offset, as the reference's dual_net.py): re-measure them.

A trained frozen target does not help (measured after the fix, loaded 2-core machine): the
mini pipeline run with seed 1 for 4 generations, frozen, as the target; 40 games a match
(standard error <= 0.08): the UNTRAINED seed-0 network already wins 0.625 against it, and the
seed-0 learner by generation: 0.500, 0.650, 0.650, 0.625, 0.625, 0.525, 0.525, 0.625, 0.600,
0.400. The target trained for 4 generations (its own rates against an untrained net: 0.625,
0.500, 0.600, 0.550) is no stronger than an untrained net: this mini's self-play does not
measurably learn in 10 generations, so no frozen-checkpoint target gives a curve either.

Issue 14: no bug was found in the targets or the search; `mini` now trains 64 steps a
generation on examples under random board symmetries and beats its own untrained net 0.825
and 0.925 at generations 8 and 10 (seed 0, 40 games; mini.py's docstring). This config keeps
the old settings (16 steps, no symmetries) until its curve and target are re-measured with them.
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
    c.eval.target_value = 0.7
    # The settings its measurements (above) and tests/test_minigo_mini.py were taken with, kept
    # until they are re-measured with the mini's issue-14 training (64 steps, symmetries).
    c.schedule.steps_per_generation = 16
    c.data.random_rotation = False
    return c
