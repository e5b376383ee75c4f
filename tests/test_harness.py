"""Harness mechanics that need no model: cadence, targets, overrides, results layout."""

from __future__ import annotations

import json

import ml_collections
import pytest

from tpubench import config as config_lib
from tpubench.errors import UsageError
from tpubench.loops.cadence import Cadence
from tpubench.mlperf import results
from tpubench.workload import Target


def _cfg(**kw) -> ml_collections.ConfigDict:
    c = config_lib.base_config()
    config_lib.apply_overrides(c, kw)
    return c


def test_eval_steps_come_from_sample_points_and_do_not_drift():
    """ResNet full: every 4 epochs of 1,281,167 images at batch 3,264; eval j runs at the first
    step at or after 4j epochs. Bites: a fixed step interval ceil(4 epochs / batch) = 1571 steps
    drifts to 4.04 epochs apart and misses the sample point of eval 2 onwards."""
    n = 1_281_167
    c = Cadence.from_config(_cfg(**{"data.global_batch_size": 3264, "eval.every_samples": 4 * n,
                                    "run.steps_per_dispatch": 16,
                                    "run.max_train_samples": 88 * n}), n)
    assert c.eval_steps[:3] == (1571, 3141, 4711)
    for j, s in enumerate(c.eval_steps, start=1):
        assert s * 3264 >= 4 * j * n > (s - 1) * 3264
    assert len(c.eval_steps) == 22 and c.max_steps == c.eval_steps[-1]


def test_bert_evals_start_at_3m_samples_then_every_500k():
    """Bites: offset + ceil(interval) steps gives 3,047,424 then every 507,904 (the old bug)."""
    c = Cadence.from_config(_cfg(**{"data.global_batch_size": 8192,
                                    "eval.offset_samples": 2_500_000,
                                    "eval.every_samples": 500_000, "run.steps_per_dispatch": 31,
                                    "run.max_train_samples": 5_000_000}), 1)
    samples = [s * 8192 for s in c.eval_steps]
    assert c.eval_steps[0] == 367 and samples[0] == 3_006_464  # first step >= 3,000,000
    for j, got in enumerate(samples):
        point = 3_000_000 + j * 500_000
        assert got >= point > got - 8192
    assert c.next_eval(0) == 367 and c.next_eval(367) == c.eval_steps[1]


def test_dispatches_are_k_step_blocks_then_one_remainder_block():
    c = Cadence.from_config(_cfg(**{"data.global_batch_size": 32, "eval.every_samples": 45 * 32,
                                    "run.steps_per_dispatch": 16,
                                    "run.max_train_samples": 90 * 32}), 1437)
    assert c.eval_steps == (45, 90)
    assert c.dispatches(0, 45) == [16, 16, 13] and c.dispatches(50, 90) == [16, 16, 8]
    assert c.remainder_sizes(0) == (13,) and c.remainder_sizes(50) == (8,)
    aligned = Cadence.from_config(_cfg(**{"data.global_batch_size": 32,
                                          "eval.every_samples": 64 * 32,
                                          "run.steps_per_dispatch": 16,
                                          "run.max_train_samples": 128 * 32}), 1)
    assert aligned.remainder_sizes(0) == () and aligned.remainder_sizes(3) == (13,)
    # BERT full: intervals of 61 and 62 steps at K=31 need two extra executables, not 30.
    bert = Cadence.from_config(_cfg(**{"data.global_batch_size": 8192,
                                       "eval.offset_samples": 2_500_000,
                                       "eval.every_samples": 500_000,
                                       "run.steps_per_dispatch": 31,
                                       "run.max_train_samples": 560 * 8192}), 1)
    assert set(bert.remainder_sizes(0)) <= {26, 30} and len(bert.remainder_sizes(0)) == 2


def test_epochs_are_numbered_from_1():
    """MLPerf rule "Epoch numbering": the first block starts in epoch 1; an eval after 4 epochs
    is logged at epoch_num 4. Bites: the old 0-based first_epoch_num."""
    from tpubench.loops.cadence import block_first_epoch, epochs_trained

    assert block_first_epoch(0, 1000) == 1 and block_first_epoch(4000, 1000) == 5
    assert epochs_trained(4000, 1000) == 4 and epochs_trained(1440, 1437) == 1.0021


def test_target_direction_and_nan():
    assert Target("acc", 0.75).reached(0.75)
    assert not Target("acc", 0.75).reached(0.7499)
    assert Target("wer", 0.08, higher_is_better=False).reached(0.07)
    assert not Target("acc", 0.75).reached(float("nan"))


def test_overrides_are_typed_and_unknown_keys_refused():
    cfg = config_lib.load("resnet", "mini", ["--config.data.global_batch_size=64",
                                             "--config.run.mesh.data=2",
                                             "--config.model.dtype=bfloat16",
                                             "--config.optimizer.learning_rate=1"])
    assert cfg.data.global_batch_size == 64 and cfg.run.mesh.data == 2
    assert cfg.model.dtype == "bfloat16"
    assert cfg.optimizer.learning_rate == 1.0
    with pytest.raises(UsageError, match="Unknown config key 'run.mesh.pipeline'"):
        config_lib.load("resnet", "mini", {"run.mesh.pipeline": 2})
    with pytest.raises(UsageError, match="Non-boolean argument to boolean flag"):
        config_lib.load("resnet", "mini", ["--config.is_mlperf=maybe"])


def test_default_workdirs_keep_mini_runs_apart_and_never_reuse_a_run(tmp_path):
    mini = config_lib.load("resnet", "mini")
    full = config_lib.load("resnet", "full")
    first = results.default_workdir(tmp_path, mini, "1xcpu")
    assert first == tmp_path / "mini" / "1xcpu" / "resnet" / "mini" / "run_0"
    first.mkdir(parents=True)
    assert results.default_workdir(tmp_path, mini, "1xcpu").name == "run_1"
    assert results.default_workdir(tmp_path, full, "8xTPU_v5p").parts[-5] == "mlperf"


def test_summary_is_written_once_and_a_failed_attempts_log_is_kept(tmp_path):
    run = results.RunDir(tmp_path)
    run.prepare(resumed=False)
    run.log_path.write_text("attempt 0\n")
    run.prepare(resumed=True)  # a resumed run appends to its log
    assert run.log_path.read_text() == "attempt 0\n"
    run.prepare(resumed=False)  # an attempt that left no checkpoint: set aside, never deleted
    assert (tmp_path / "mlperf_log.failed_attempt0.txt").read_text() == "attempt 0\n"
    assert not run.log_path.exists()
    run.write_summary({"status": "success"})
    with pytest.raises(UsageError):
        run.write_summary({"status": "aborted"})
    assert json.loads(run.summary_path.read_text())["status"] == "success"
    with pytest.raises(UsageError, match="already holds a finished run"):
        run.check_not_finished()
