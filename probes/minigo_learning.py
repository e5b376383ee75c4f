"""Question: does the MiniGo `mini` config's self-play learn, and can it beat GNU Go level 0
(its target, win rate >= 0.5) within its budget? Open: its target is still provisional.
Date: 2026-12-02 (the --vs=gnugo and --save runs: session 2026-12-02c).
Config: minigo `mini` (workloads/minigo/configs/mini.py; its docstring has the figures).

The generation loop from the harness's own pieces
(`workload.selfplay`, `generations.Window`, the train dispatch), with two learning measures
per generation that the harness does not log:

  holdout_value_mse   the current net's value error on the NEW generation's self-play
                      positions, before it trains on them (unseen; predicting 0 scores 1.0)
  win_vs_gen0         every EVERY generations: the win rate of the trained net against
                      generation 0 (the run's own frozen untrained net), GAMES games half with
                      each colour (`match.ModelEvaluator`, greedy search without noise)
  win_vs_gnugo        with --vs=gnugo instead: the win rate against the config's GNU Go
                      (`match.GnuGoEvaluator`: eval.gnugo_level, data.komi), GAMES games, and
                      the games won as black (the first half) and as white

    python probes/minigo_learning.py OUT.jsonl GENERATIONS EVERY GAMES [KEY=VALUE ...]
        [--vs=gen0|gnugo] [--save=DIR]    (--save: each generation's net as DIR/<g>.npz)
    e.g. python probes/minigo_learning.py /tmp/mini_s0.jsonl 10 2 40 run.seed=0

KEY=VALUE overrides the `mini` config (values as Python literals). One JSON line per
generation is printed and appended to OUT.jsonl. Figures: workloads/minigo/configs/mini.py's
docstring.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import steps
from tpubench.loops.selfplay import Window, _key, _variables
from workloads.minigo import match


def main(out_path: str, generations: int, every: int, games: int, overrides: list[str],
         vs: str = "gen0", save: str = "") -> None:
    cfg = config_lib.load("minigo", "mini", {
        k: ast.literal_eval(v) for k, v in (o.split("=", 1) for o in overrides)})
    w = registry.create(cfg)
    k, b = int(cfg.schedule.steps_per_generation), int(cfg.data.global_batch_size)
    state = nn.meta.unbox(jax.jit(steps.boxed_init_fn(w))(jax.random.PRNGKey(cfg.run.seed)))
    dispatch = jax.jit(steps.make_dispatch(steps.make_train_step(w)), donate_argnums=0)
    selfplay = jax.jit(w.selfplay)
    value = jax.jit(lambda v, x: w.apply(v, x)[1])
    gen0 = jax.tree.map(jnp.copy, _variables(state))
    settings = w.settings(cfg.eval.num_readouts, False)
    if vs == "gnugo":
        evaluator = match.GnuGoEvaluator(w.env, w.apply, settings, games,
                                         int(cfg.data.board_size), float(cfg.data.komi),
                                         int(cfg.eval.gnugo_level), w.max_moves, gen0)
    else:
        evaluator = match.ModelEvaluator(w.env, w.apply, settings, games, gen0, w.max_moves,
                                         gen0)
    window = Window(cfg.data.window_generations)
    with open(out_path, "a") as f:
        def log(**row):
            print(json.dumps(row), flush=True)
            f.write(json.dumps(row) + "\n")
            f.flush()

        log(overrides=overrides, vs=vs, steps=k, batch=b, seed=int(cfg.run.seed))
        for g in range(1, generations + 1):
            t0 = time.perf_counter()
            ex = jax.device_get(selfplay(_variables(state), _key(state, 0, g)))
            valid = np.asarray(ex["valid"], bool)
            v = np.asarray(value(_variables(state), jnp.asarray(ex["inputs"][valid])))
            mse = float(np.mean((v - ex["outcome"][valid]) ** 2))
            window.add(ex)
            sampler = np.random.default_rng([int(cfg.run.seed), g])  # as the harness draws
            state, tm = dispatch(state, jax.device_put(window.sample(sampler, k, b)))
            tm = jax.device_get(tm)
            t1 = time.perf_counter()
            row = dict(gen=g, holdout_value_mse=round(mse, 4),
                       black_wins=float(ex["black_wins"]), moves=float(ex["moves"]),
                       value_loss=float(tm["value_loss"]), policy_loss=float(tm["policy_loss"]),
                       step=int(state.step))
            if save:
                os.makedirs(save, exist_ok=True)
                match.save_target(os.path.join(save, f"{g}.npz"), _variables(state))
            if g % every == 0 and vs == "gnugo":
                won = evaluator.wins(_variables(state), _key(state, 1, g))
                row.update(win_vs_gnugo=float(won.mean()), won_black=int(won[:games // 2].sum()),
                           won_white=int(won[games // 2:].sum()))
            elif g % every == 0:
                row["win_vs_gen0"] = evaluator.win_rate(_variables(state), _key(state, 1, g))
            row.update(selfplay_train_s=round(t1 - t0, 1),
                       eval_s=round(time.perf_counter() - t1, 1), load1=os.getloadavg()[0])
            log(**row)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        sys.exit(0)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    if len(args) < 4 or set(flags) - {"vs", "save"}:
        sys.exit(__doc__)
    main(args[0], int(args[1]), int(args[2]), int(args[3]), args[4:], **flags)
