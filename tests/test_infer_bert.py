"""`tpubench infer bert` on the mini config (Shakespeare masked LM) with the real LoadGen: the
Offline quick profile is VALID, accuracy mode on a training checkpoint reports exactly the
training run's eval, and the full config (MLPerf's bert-99 = SQuAD) is refused clearly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.infer import cli
from tpubench.infer.spec import inference_spec
from workloads.bert import inference

BUCKETS = "--batch-sizes=1,8,64"  # fewer compiles keep the test short on 2 cores


def test_masked_lm_accuracy_counts_used_slots_only():
    labels = np.array([[5, 7, -1], [9, -1, -1]], np.int32)
    outputs = np.array([[5, 8, 0], [9, 3, 3]], np.int32)  # unused slots answer anything
    assert inference.masked_lm_accuracy(outputs, labels) == pytest.approx(2 / 3)


def test_mini_samples_are_the_eval_windows_with_their_masked_words():
    workload = registry.create(config_lib.load("bert", "mini", {}))
    samples = inference.load_eval_samples(workload)
    assert samples.count == 512
    assert sorted(samples.inputs) == sorted(inference.INPUT_KEYS)
    assert samples.inputs["input_ids"].shape == (512, 64)
    assert samples.labels.shape == (512, 10) and samples.labels.dtype == np.int32
    # Every used slot is a masked word the training eval counts (weight 1), and only those.
    weights = workload._eval_examples["masked_lm_weights"]
    assert int(np.sum(samples.labels != inference.UNUSED_SLOT)) == int(weights.sum())
    assert np.all(samples.labels[weights == 0] == inference.UNUSED_SLOT)


def test_bert_mini_offline_quick_is_valid_with_a_throughput(tmp_path, capsys):
    rc = cli.main(["bert", "--config=mini", "--scenario=Offline", BUCKETS,
                   f"--workdir={tmp_path}"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert rc == 0, summary["invalid_reasons"]
    assert summary["validity"] == "VALID"
    assert summary["mlperf_name"] == "bert-99"
    assert summary["params"] == "random_init:seed=0"
    # One query sized by LoadGen from the expected QPS (2x the warm-up throughput) x 0.5 s.
    assert summary["samples_per_query"] >= 0.5 * summary["settings"]["expected_qps"]
    assert summary["samples_per_s"] > 20
    assert summary["settings"]["latency_bound_ms"] == 130.0
    assert "Offline performance: VALID" in capsys.readouterr().out


def test_full_config_is_refused_because_squad_is_not_served(tmp_path, capsys):
    workload = registry.create(config_lib.load("bert", "full", {}))
    with pytest.raises(UsageError, match="SQuAD fine-tuning is not implemented"):
        inference_spec(workload)
    rc = cli.main(["bert", "--config=full", "--scenario=Offline", f"--workdir={tmp_path}"])
    assert rc == 2
    assert "masked-LM (pre-training) model" in capsys.readouterr().err
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.slow
def test_accuracy_mode_on_a_checkpoint_reports_the_training_eval(tmp_path):
    from tpubench import train

    # 10 steps (target unreachable: the run ends "aborted" at the sample budget, with a
    # checkpoint and one eval), enough to move the accuracy off zero.
    cfg = config_lib.load("bert", "mini", {
        "max_train_samples": 10 * 32, "steps_per_dispatch": 10, "eval_every_samples": 10 * 32,
        "warmup_steps": 2, "target_value": 1.0,
    })
    trained = train.train_and_evaluate(cfg, tmp_path / "train")
    written = json.loads((tmp_path / "train" / "summary.json").read_text())
    assert written["status"] == "aborted"
    assert written["final_quality"] > 0.02  # above zero, so the comparison means something
    rc = cli.main(["bert", "--config=mini", "--scenario=Offline", "--mode=accuracy", BUCKETS,
                   f"--params={tmp_path / 'train'}", f"--workdir={tmp_path / 'infer'}"])
    summary = json.loads((tmp_path / "infer" / "summary.json").read_text())
    assert summary["params"].startswith("checkpoint:")
    assert summary["quality_metric"] == "masked_lm_accuracy"
    assert summary["accuracy_samples"] == 512
    assert summary["accuracy"] == pytest.approx(written["final_quality"], abs=1e-6)
    assert summary["reference_accuracy"] == pytest.approx(trained["final_quality"], abs=1e-6)
    assert summary["accuracy_target"] == pytest.approx(0.99 * written["final_quality"])
    assert summary["accuracy_met"] is True
    assert rc == 0
