"""The GNMT mini's time-to-quality run, bounded in steps (slow; no wall-clock budget)."""

import pytest

from tpubench import config as config_lib
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
from workloads.gnmt.workload import GNMTWorkload

# The latest eval point (step) at which the mini first reached its target over seeds 0-4 and
# lr x (1 + 1e-6), 10 runs on an Intel Xeon (configs/mini.py): 400 or 500, never 300 (BLEU
# 18.0-20.9 there). Rounding moves seed 0 across the line at 400 (24.92 vs 25.41), so both
# tested seeds get the latest step.
MINI_TARGET_STEP = {0: 500, 1: 500}


def _run_to_target(seed, shared_data_dir, tmp_path):
    c = config_lib.load("gnmt", "mini")
    every = c.eval.every_samples // c.data.global_batch_size
    # The budget ends at the measured step: a slower run stops there ("aborted") instead of
    # running the config's 1,000 steps. The trajectory is unchanged.
    config_lib.apply_overrides(c, {
        "run.seed": seed, "data.dir": str(shared_data_dir),
        "data.cache_dir": str(tmp_path / "cache"),
        "run.max_train_samples": MINI_TARGET_STEP[seed] * c.data.global_batch_size})
    assert c.run.max_time_s == 0.0
    GNMTWorkload(c).prepare()
    summary = train.train_and_evaluate(c, tmp_path / "run")
    assert summary["status"] == "success", summary["quality_history"]
    # At the latest measured eval point or one earlier, never later: at step 500 every measured
    # run had 27.0-27.5, 2 BLEU above the target (configs/mini.py).
    assert MINI_TARGET_STEP[seed] - every <= summary["steps"] <= MINI_TARGET_STEP[seed], \
        summary["quality_history"]
    assert summary["final_quality"] >= c.eval.target_value
    result = mllog.check_compliance(tmp_path / "run" / "mlperf_log.txt")
    assert result.valid, result.output


@pytest.mark.slow
@pytest.mark.extended  # 307 s of the default run (suite budget ~25 min on 2 cores); the GNMT
# smoke tests stay in it (test_gnmt.py), as the Transformer's do for its extended mini
def test_mini_reaches_its_bleu_target_at_the_measured_step(shared_data_dir, tmp_path):
    """Seed 0 reaches BLEU 25.0 by its measured eval point (step 500; not earlier than 400) and
    its log passes the official checker. Break tried: the mini's previous lr 3e-3 (this config
    otherwise). With the first version of this test (budget 600 steps, +-100 steps) it PASSED
    (25.13 at step 600), so the budget and bound were tightened to step 500, where that run had
    23.24: it would now abort there (not re-run against the break yet)."""
    _run_to_target(0, shared_data_dir, tmp_path)


@pytest.mark.slow
@pytest.mark.extended
def test_mini_reaches_its_bleu_target_at_the_measured_step_seed_1(shared_data_dir, tmp_path):
    """The same for seed 1 (measured: step 400, 26.02; lr x (1 + 1e-6): 400); run with
    --extended."""
    _run_to_target(1, shared_data_dir, tmp_path)
