"""The RNN-T mini (FSDD digit strings, held-out speaker): trained to its WER target with the
RNN-T loss, then served by `tpubench infer` with LoadGen, whose accuracy mode must report the
training eval's own WER."""

from __future__ import annotations

import json

import pytest

from tpubench import config as config_lib
from tpubench.infer import cli
from tpubench.loops import supervised as train

# The eval step at which the mini first reaches its target, measured on an Intel Xeon with the
# config as committed (workloads/rnnt/configs/mini.py): seeds 0-4 and each with lr x (1 + 1e-6)
# cross between steps 375 and 600 (seed 0: 525, seed 1: 450). Rounding moves the step by an
# eval or two, so the tests give each run the latest crossing measured plus one eval.
MINI_EVAL_EVERY = 75
MINI_LATEST_CROSSING = 600
MINI_BUDGET_STEPS = MINI_LATEST_CROSSING + MINI_EVAL_EVERY


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory, shared_data_dir):
    workdir = tmp_path_factory.mktemp("rnnt_mini") / "run"
    cfg = config_lib.load("rnnt", "mini", {"data.dir": str(shared_data_dir),
                                           "run.max_train_samples": MINI_BUDGET_STEPS * 32})
    return workdir, train.train_and_evaluate(cfg, workdir)


@pytest.mark.slow
def test_mini_reaches_its_wer_target_within_the_measured_steps(mini_run):
    """Seed 0, step budget one eval past the latest crossing measured (no wall-clock budget).

    Bites: not tried (each try is a full mini run); the loss and decoder breaks of
    tests/test_rnnt.py are what this run rests on."""
    _, s = mini_run
    assert s["status"] == "success", s["quality_history"]
    assert s["final_quality"] <= s["target"] == 0.20
    assert s["steps"] <= MINI_BUDGET_STEPS and s["steps"] % MINI_EVAL_EVERY == 0, s["steps"]
    assert all(h["quality"] > s["target"] for h in s["quality_history"][:-1])


@pytest.mark.slow
def test_infer_accuracy_mode_reports_the_training_eval_wer(mini_run, shared_data_dir):
    """The trained mini under LoadGen (Offline, accuracy mode, the eval batch size as the only
    batch bucket, served in the config's frame buckets 20..100 while the training eval pads to
    100): 1 - WER from LoadGen's accuracy log equals 1 - the training run's final WER exactly
    (measured on a step-600 checkpoint before frame buckets: 0.8333 both; with them, on a
    step-300 checkpoint by hand: 0.467014 both).

    Bites: responses cut to their first 12 ids: the run reported 0.0 for both accuracy and
    reference_accuracy (unexplained; the clean run gave 0.8333 for both), so the equality held:
    this test does NOT catch that break; it checks the plumbing and the exact match."""
    workdir, s = mini_run
    out = workdir.parent / "infer"
    rc = cli.main(["rnnt", "--config=mini", "--scenario=Offline", "--mode=accuracy",
                   "--batch-sizes=50", f"--params={workdir}", f"--workdir={out}",
                   f"--config.data.dir={shared_data_dir}"])
    summary = json.loads((out / "summary.json").read_text())
    assert rc == 0 and summary["accuracy_met"] is True
    assert summary["accuracy_samples"] == 200
    assert summary["accuracy"] == pytest.approx(1.0 - s["final_quality"], abs=1e-12)
    assert summary["reference_accuracy"] == pytest.approx(1.0 - s["final_quality"], abs=1e-12)



@pytest.mark.slow
@pytest.mark.extended  # the default run keeps seed 0 (suite budget ~25 min on 2 cores)
def test_mini_reaches_its_wer_target_within_the_measured_steps_on_a_second_seed(
        tmp_path, shared_data_dir):
    """Seed 1, the same budget.

    Bites: not tried (a full mini run per try)."""
    cfg = config_lib.load("rnnt", "mini", {"data.dir": str(shared_data_dir), "run.seed": 1,
                                           "run.max_train_samples": MINI_BUDGET_STEPS * 32})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "success", s["quality_history"]
    assert s["steps"] <= MINI_BUDGET_STEPS, s["steps"]
