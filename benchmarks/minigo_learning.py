"""Does a MiniGo config's self-play learn? The generation loop from the harness's own pieces
(`workload.selfplay`, `generations.Window`, the train dispatch), with two learning measures
per generation that the harness does not log:

  holdout_value_mse   the current net's value error on the NEW generation's self-play
                      positions, before it trains on them (unseen; predicting 0 scores 1.0)
  win_vs_gen0         every EVERY generations: the win rate of the trained net against
                      generation 0 (the run's own frozen untrained net), GAMES games half with
                      each colour (`match.ModelEvaluator`, greedy search without noise)

    python benchmarks/minigo_learning.py OUT.jsonl GENERATIONS EVERY GAMES [KEY=VALUE ...]
    e.g. python benchmarks/minigo_learning.py /tmp/mini_s0.jsonl 10 2 40 run.seed=0

KEY=VALUE overrides the `mini` config (values as Python literals). One JSON line per
generation is printed and appended to OUT.jsonl. Figures: configs/mini.py's docstring.
"""

from __future__ import annotations

import ast
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry, steps
from tpubench.generations import Window, _key, _variables
from workloads.minigo import match


def main(out_path: str, generations: int, every: int, games: int, overrides: list[str]) -> None:
    cfg = config_lib.load("minigo", "mini", {
        k: ast.literal_eval(v) for k, v in (o.split("=", 1) for o in overrides)})
    w = registry.create(cfg)
    k, b = int(cfg.schedule.steps_per_generation), int(cfg.data.global_batch_size)
    state = nn.meta.unbox(jax.jit(steps.boxed_init_fn(w))(jax.random.PRNGKey(cfg.run.seed)))
    dispatch = jax.jit(steps.make_dispatch(steps.make_train_step(w)), donate_argnums=0)
    selfplay = jax.jit(w.selfplay)
    value = jax.jit(lambda v, x: w.apply(v, x)[1])
    gen0 = jax.tree.map(jnp.copy, _variables(state))
    evaluator = match.ModelEvaluator(w.env, w.apply, w.settings(cfg.eval.num_readouts, False),
                                     games, gen0, w.max_moves, gen0)
    window = Window(cfg.data.window_generations)
    with open(out_path, "a") as f:
        def log(**row):
            print(json.dumps(row), flush=True)
            f.write(json.dumps(row) + "\n")
            f.flush()

        log(overrides=overrides, steps=k, batch=b, seed=int(cfg.run.seed))
        for g in range(1, generations + 1):
            ex = jax.device_get(selfplay(_variables(state), _key(state, 0, g)))
            valid = np.asarray(ex["valid"], bool)
            v = np.asarray(value(_variables(state), jnp.asarray(ex["inputs"][valid])))
            mse = float(np.mean((v - ex["outcome"][valid]) ** 2))
            window.add(ex)
            sampler = np.random.default_rng([int(cfg.run.seed), g])  # as the harness draws
            state, tm = dispatch(state, jax.device_put(window.sample(sampler, k, b)))
            tm = jax.device_get(tm)
            row = dict(gen=g, holdout_value_mse=round(mse, 4),
                       black_wins=float(ex["black_wins"]), moves=float(ex["moves"]),
                       value_loss=float(tm["value_loss"]), policy_loss=float(tm["policy_loss"]),
                       step=int(state.step))
            if g % every == 0:
                row["win_vs_gen0"] = evaluator.win_rate(_variables(state), _key(state, 1, g))
            log(**row)


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
