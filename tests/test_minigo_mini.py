"""The MiniGo mini (mini_frozen: 5x5, a frozen untrained network as the target, 40 evaluation
games) reaches its win-rate target at the measured generation: bounded in generations, never in
wall-clock time; its log passes the official checker. Measured curves: configs/mini_frozen.py's
docstring."""

from __future__ import annotations

import pytest

from tpubench import config as config_lib
from tpubench.loops import run as train
from tpubench.mlperf import mllog

# The latest generation at which each seed first reached the target, with and without a rounding
# perturbation (configs/mini_frozen.py, 2026-12-05): seed 0 at 6 and 6, seed 1 at 2 and 3.
MEASURED_GENERATION = {0: 6, 1: 3}


def _reaches_target(seed: int, tmp_path) -> None:
    cfg = config_lib.load("minigo", "mini_frozen", {
        "run.seed": seed, "run.max_generations": MEASURED_GENERATION[seed] + 1})
    assert cfg.run.max_time_s == 0.0  # bounded in generations only
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "success", s["quality_history"]
    assert 1 <= s["generations"] <= MEASURED_GENERATION[seed] + 1
    assert s["quality_history"][0]["quality"] < cfg.eval.target_value
    result = mllog.check_compliance(s["mlperf_log"])
    assert result.valid, result.output


@pytest.mark.slow
def test_mini_frozen_reaches_its_target_at_the_measured_generation(tmp_path):
    """Seed 1: win rate >= 0.8 by generation 3 (measured .700 .950, and .750 .775 .825 with
    the lr x (1 + 1e-6); the untrained net 0.425), within 4 generations; the log passes the
    official checker. It took 396 s (passed, load average 11-15 on 2 cores; init and 2
    generations; 106 s on the clock in the 2026-12-05 measurement) but stays in the default
    run: it is the only default test in which the reinforcement-learning loop must learn.

    Bites: training switched off (`schedule.lr_rates=(0.0,)`: every update zeroed, batch-norm
    statistics still updated) won 0.400, 0.525, 0.625 at generations 1-3 (`tpubench run
    minigo --config=mini_frozen --config.run.seed=1 --config.run.max_generations=3`): aborted.
    Earlier (the old settings' target 0.7): a float32 win rate (a mean of games: 0.69999999 <
    0.7) kept seed 1 from stopping at its generation."""
    _reaches_target(1, tmp_path)


@pytest.mark.slow
@pytest.mark.extended
def test_mini_frozen_reaches_its_target_at_the_measured_generation_seed_0(tmp_path):
    """Seed 0: >= 0.8 by generation 6 (.575-.700 at generations 1-5, measured through the
    harness 2026-12-05), within 7 generations; run with --extended."""
    _reaches_target(0, tmp_path)
