"""The trivial baseline of a MiniGo config: the win rate of the UNTRAINED network (generation 0,
the run's own initialisation) against the config's evaluation target, with the same evaluator
the run uses. A mini's target must sit above it.

    python benchmarks/minigo_baseline.py [CONFIG ...]     (default: mini_frozen)
"""

from __future__ import annotations

import sys

import jax

from tpubench import config as config_lib
from tpubench import registry
from tpubench.generations import _key


def baseline(config_name: str) -> float:
    cfg = config_lib.load("minigo", config_name)
    w = registry.create(cfg)
    variables = w.init_variables(jax.random.PRNGKey(cfg.run.seed))
    evaluator = w.make_evaluator(variables)
    evaluator.compile()

    class _State:  # the generation-1 evaluation key of a run with this seed
        rng = jax.random.PRNGKey(cfg.run.seed)

    return evaluator.win_rate(variables, _key(_State, 1, 1))


if __name__ == "__main__":
    for name in sys.argv[1:] or ["mini_frozen"]:
        print(f"minigo/{name}: untrained network's win rate vs the target: "
              f"{baseline(name):.3f}", flush=True)
