"""Harness mechanics that need no model: cadence, targets, overrides, results layout."""

from __future__ import annotations

import json

import ml_collections
import pytest

from tpubench import config as config_lib
from tpubench import results
from tpubench.errors import UsageError
from tpubench.train import Cadence
from tpubench.workload import Target


def _cfg(**kw) -> ml_collections.ConfigDict:
    c = config_lib.base_config()
    c.update(kw)
    return c


def test_cadence_picks_the_largest_dispatch_that_divides_the_eval_interval():
    c = Cadence.from_config(_cfg(global_batch_size=32, eval_every_samples=45 * 32,
                                 steps_per_dispatch=16, max_train_samples=10 * 45 * 32), 1437)
    assert c.steps_per_dispatch == 15 and c.steps_per_eval == 45
    assert [c.next_eval(s) for s in (0, 44, 45, 60)] == [45, 45, 90, 90]
    assert c.max_steps == 450


def test_cadence_with_an_offset_evaluates_first_at_offset_plus_interval():
    # BERT style: first eval at 3M samples, then every 500K (batch 1000).
    c = Cadence.from_config(_cfg(global_batch_size=1000, eval_offset_samples=2_500_000,
                                 eval_every_samples=500_000, steps_per_dispatch=100,
                                 max_train_samples=4_000_000), 1)
    assert c.steps_per_dispatch == 100
    assert c.next_eval(0) == 3000 and c.next_eval(3000) == 3500
    assert c.max_steps == 4000


def test_target_direction_and_nan():
    assert Target("acc", 0.75).reached(0.75)
    assert not Target("acc", 0.75).reached(0.7499)
    assert Target("wer", 0.08, higher_is_better=False).reached(0.07)
    assert not Target("acc", 0.75).reached(float("nan"))


def test_overrides_are_typed_and_unknown_keys_refused():
    cfg = config_lib.load("resnet", "mini", ["--config.global_batch_size=64",
                                             "--config.mesh.data=2", "--config.dtype=bfloat16",
                                             "--config.optimizer.base_learning_rate=1"])
    assert cfg.global_batch_size == 64 and cfg.mesh.data == 2 and cfg.dtype == "bfloat16"
    assert cfg.optimizer.base_learning_rate == 1.0
    with pytest.raises(UsageError, match="Unknown config key 'mesh.pipeline'"):
        config_lib.load("resnet", "mini", {"mesh.pipeline": 2})
    with pytest.raises(UsageError, match="expects true or false"):
        config_lib.load("resnet", "mini", ["--config.is_mlperf=maybe"])


def test_default_workdirs_keep_mini_runs_apart_and_never_reuse_a_run(tmp_path):
    mini = config_lib.load("resnet", "mini")
    full = config_lib.load("resnet", "full")
    first = results.default_workdir(tmp_path, mini, "1xcpu")
    assert first == tmp_path / "mini" / "1xcpu" / "resnet" / "mini" / "run_0"
    first.mkdir(parents=True)
    assert results.default_workdir(tmp_path, mini, "1xcpu").name == "run_1"
    assert results.default_workdir(tmp_path, full, "8xTPU_v5p").parts[-5] == "mlperf"


def test_summary_is_written_once_and_an_earlier_attempts_log_is_kept(tmp_path):
    run = results.RunDir(tmp_path)
    run.prepare()
    run.log_path.write_text("attempt 0\n")
    run.prepare()  # a resumed attempt sets the old log aside, never deletes it
    assert (tmp_path / "mlperf_log.attempt0.txt").read_text() == "attempt 0\n"
    run.write_summary({"status": "success"})
    with pytest.raises(UsageError):
        run.write_summary({"status": "aborted"})
    assert json.loads(run.summary_path.read_text())["status"] == "success"
    with pytest.raises(UsageError, match="already holds a finished run"):
        run.check_not_finished()
