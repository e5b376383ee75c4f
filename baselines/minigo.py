"""The trivial baseline of a MiniGo config: the win rate of the UNTRAINED network (generation 0,
the run's own initialisation) against the config's evaluation target, with the same evaluator
the run uses. A mini's target must sit above it.

    python baselines/minigo.py [CONFIG ...] [KEY=VALUE ...]   (default: mini_frozen)
    e.g. python baselines/minigo.py mini_frozen run.seed=1
"""

from __future__ import annotations

import argparse
import ast

import jax

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops.selfplay import _key


def baseline(config_name: str, overrides: dict | None = None) -> float:
    cfg = config_lib.load("minigo", config_name, overrides or {})
    w = registry.create(cfg)
    variables = w.init_variables(jax.random.PRNGKey(cfg.run.seed))
    evaluator = w.make_evaluator(variables)
    evaluator.compile()

    class _State:  # the generation-1 evaluation key of a run with this seed
        rng = jax.random.PRNGKey(cfg.run.seed)

    return evaluator.win_rate(variables, _key(_State, 1, 1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("args", nargs="*", metavar="CONFIG or KEY=VALUE")
    argv = parser.parse_args().args
    names = [a for a in argv if "=" not in a] or ["mini_frozen"]
    overrides = {k: ast.literal_eval(v) for k, v in
                 (a.split("=", 1) for a in argv if "=" in a)}
    for name in names:
        print(f"minigo/{name} {overrides}: untrained network's win rate vs the target: "
              f"{baseline(name, overrides):.3f}", flush=True)
