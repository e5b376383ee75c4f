"""The MiniGo mini (mini_frozen: 5x5, a frozen untrained network of another seed as target)
reaches its win-rate target at the measured generation. Slow: init ~1-2 min + 2 generations
(~2.5 min on the clock) on a shared 2-core machine."""

from __future__ import annotations

import pytest

from tpubench import config as config_lib
from tpubench import train

MEASURED_GENERATION = 2  # seeds 0 and 1 (configs/mini_frozen.py docstring)


@pytest.mark.slow
def test_mini_frozen_reaches_its_target_at_the_measured_generation(tmp_path):
    """Generation-bounded (one generation of slack), never wall-clock bounded; the untrained
    network's rate (the baseline, 0.45) is below the target, and so is generation 1's (0.65).

    Bites: a float32 win rate (mean of 20 games: 0.69999999 < 0.7) kept the measured seed-1
    run from stopping at generation 2 (seen in the run, before the exact count in match.py)."""
    cfg = config_lib.load("minigo", "mini_frozen", {
        "run.max_generations": MEASURED_GENERATION + 1, "run.max_time_s": 0.0})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "success", s["quality_history"]
    assert s["generations"] in (MEASURED_GENERATION, MEASURED_GENERATION + 1)
    assert s["quality_history"][0]["quality"] < cfg.eval.target_value
