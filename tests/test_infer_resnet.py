"""`tpubench infer resnet` end to end on the mini config (held-out digits) with the real LoadGen:
the Offline quick profile is VALID, and accuracy mode on a training run's checkpoint reports the
training run's own eval accuracy."""

from __future__ import annotations

import json

import pytest

from tpubench import config as config_lib
from tpubench.infer import cli

BUCKETS = "--batch-sizes=1,8,32"  # fewer compiles keep the test short on 2 cores


def test_resnet_mini_offline_quick_is_valid_with_a_throughput(tmp_path, capsys):
    rc = cli.main(["resnet", "--config=mini", "--scenario=Offline", BUCKETS,
                   f"--workdir={tmp_path}"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert rc == 0, summary["invalid_reasons"]
    assert summary["validity"] == "VALID"
    assert summary["mlperf_name"] == "resnet50"
    assert summary["params"] == "random_init:seed=0"
    assert summary["samples_per_s"] > 50
    assert summary["samples_per_query"] >= 360
    assert "Offline performance: VALID" in capsys.readouterr().out


def test_unknown_scenario_and_missing_checkpoint_are_usage_errors(tmp_path):
    with pytest.raises(SystemExit):
        cli.main(["resnet", "--config=mini", "--scenario=Batch", f"--workdir={tmp_path}"])
    rc = cli.main(["resnet", "--config=mini", "--scenario=Offline", BUCKETS,
                   f"--params={tmp_path / 'nothing'}", f"--workdir={tmp_path / 'out'}"])
    assert rc == 2


@pytest.mark.slow
def test_accuracy_mode_on_a_checkpoint_reports_the_training_eval(tmp_path):
    from tpubench import train

    cfg = config_lib.load("resnet", "mini", {"max_train_samples": 2 * 1437})
    trained = train.train_and_evaluate(cfg, tmp_path / "train")
    rc = cli.main(["resnet", "--config=mini", "--scenario=Offline", "--mode=accuracy", BUCKETS,
                   f"--params={tmp_path / 'train'}", f"--workdir={tmp_path / 'infer'}"])
    summary = json.loads((tmp_path / "infer" / "summary.json").read_text())
    assert summary["params"].startswith("checkpoint:")
    assert summary["accuracy_samples"] == 360
    assert summary["reference_accuracy"] == pytest.approx(trained["final_quality"], abs=1e-6)
    assert summary["accuracy"] == pytest.approx(trained["final_quality"], abs=1 / 360)
    assert summary["accuracy_met"] is True
    assert rc == 0
