"""Question: what win-rate curve would a MiniGo config's own evaluation log along a training
trajectory it did not run, e.g. `mini_frozen`'s on the nets of the `mini` GNU Go run? (Seed 0's
generation-8 crossing of mini_frozen's 0.8 comes from here, not yet from a harness run.)
Date: 2026-12-02 (session 2026-12-02c).
Config: minigo `mini_frozen` (workloads/minigo/configs/mini_frozen.py; figures in its docstring).

The win-rate curve a MiniGo config's evaluation would log, from the per-generation nets a
`probes/minigo_learning.py --save=DIR` run wrote (`DIR/<g>.npz`): each net plays the
CONFIG's own evaluation (`workload.make_evaluator`: its opponent, games, readouts) with the key
the harness uses at that generation (`generations._key(state, 1, g)`, state.rng = the seed's
key). The training trajectory does not depend on the evaluation opponent, so one learning run
gives the curve of every config that shares its self-play and training settings.

    python probes/minigo_saved_curve.py DIR CONFIG SEED [KEY=VALUE ...]
    e.g. python probes/minigo_saved_curve.py /tmp/nets_s0 mini_frozen 0 eval.games=40

One JSON line per generation (gen, win_rate, won_black, won_white: our colour is black in the
first half of the games).
"""

from __future__ import annotations

import ast
import json
import pathlib
import sys

import jax
import numpy as np

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops.selfplay import _key
from workloads.minigo import match


class _State:
    def __init__(self, seed: int):
        self.rng = jax.random.PRNGKey(seed)


def main(folder: str, config_name: str, seed: int, overrides: list[str]) -> None:
    cfg = config_lib.load("minigo", config_name, {
        "run.seed": seed, **{k: ast.literal_eval(v) for k, v in
                             (o.split("=", 1) for o in overrides)}})
    w = registry.create(cfg)
    like = w.init_variables(jax.random.PRNGKey(seed))
    evaluator = w.make_evaluator(like)
    evaluator.compile()
    games = int(cfg.eval.games)
    paths = sorted(pathlib.Path(folder).glob("*.npz"), key=lambda p: int(p.stem))
    for path in paths:
        g = int(path.stem)
        variables = match.load_target(str(path), like)
        rng = _key(_State(seed), 1, g)
        if hasattr(evaluator, "wins"):
            won = np.asarray(evaluator.wins(variables, rng))
            row = dict(gen=g, win_rate=float(won.mean()), won_black=int(won[:games // 2].sum()),
                       won_white=int(won[games // 2:].sum()))
        else:
            row = dict(gen=g, win_rate=evaluator.win_rate(variables, rng))
        print(json.dumps(dict(config=config_name, seed=seed, overrides=overrides, **row)),
              flush=True)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        sys.exit(0)
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:])
