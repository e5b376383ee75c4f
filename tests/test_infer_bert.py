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
    c = workload.config
    n, seq, preds = c.eval.samples, c.data.max_seq_length, c.data.max_predictions_per_seq
    assert samples.count == n
    assert sorted(samples.inputs) == sorted(inference.INPUT_KEYS)
    assert samples.inputs["input_ids"].shape == (n, seq)
    assert samples.labels.shape == (n, preds) and samples.labels.dtype == np.int32
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
    assert summary["modelled_on"] == "bert-99" and summary["mlperf_result"] is False
    assert summary["params"] == "random_init:seed=0"
    # One query sized by LoadGen from the expected QPS (2x the warm-up throughput) x 0.5 s.
    assert summary["samples_per_query"] >= 0.5 * summary["settings"]["expected_qps"]
    assert summary["samples_per_s"] > 20
    assert summary["settings"]["latency_bound_ms"] == 130.0
    assert "Offline performance: LoadGen VALID" in capsys.readouterr().out


def test_full_config_is_refused_because_squad_is_not_served(tmp_path, capsys):
    workload = registry.create(config_lib.load("bert", "full", {}))
    with pytest.raises(UsageError, match="not served as bert-99"):
        inference_spec(workload)
    rc = cli.main(["bert", "--config=full", "--scenario=Offline", f"--workdir={tmp_path}"])
    assert rc == 2
    assert "masked-LM (pre-training) model" in capsys.readouterr().err
    assert not (tmp_path / "summary.json").exists()


CROSS_BATCH_TOL = 1e-4  # see tests/test_infer_resnet.py: logits differ across batch sizes


TRAINED = "mini_seq64"  # the pre-issue-19 mini: 300 steps to 0.10 (the mini takes ~5x more)


@pytest.fixture(scope="module")
def trained_bert(tmp_path_factory):
    """A model that has learned something, cheaply: `mini_seq64` trained to its 0.10 target (it
    stops at success, step 300 on seed 0; see its config docstring)."""
    from tpubench.loops import supervised as train

    workdir = tmp_path_factory.mktemp("bert_train")
    trained = train.train_and_evaluate(config_lib.load("bert", TRAINED, {}), workdir)
    return workdir, trained


@pytest.mark.slow
def test_accuracy_mode_on_a_trained_model_matches_every_direct_prediction(trained_bert,
                                                                         tmp_path):
    """On a model trained to `mini_seq64`'s target: the accuracy from LoadGen's log is the
    training eval exactly, it beats the most-frequent-word baseline by more than 2x, the
    predictions are varied, and EVERY response (every slot of every eval sample) equals the
    same-size executable run directly, and the batch-1 prediction away from near-ties. Trains
    `mini_seq64` to its target (300 steps; minutes on 2 cores).
    Bites: the completer answering row k+1 for sample k -> most responses differ and the
    accuracy drops."""
    import flax.linen as nn
    import jax

    from tpubench.infer import logs
    from tpubench.loops.checkpoint import restore_variables

    workdir, trained = trained_bert
    assert trained["status"] == "success"
    rc = cli.main(["bert", f"--config={TRAINED}", "--scenario=Offline", "--mode=accuracy",
                   "--batch-sizes=64", f"--params={workdir}", f"--workdir={tmp_path}"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert rc == 0 and summary["accuracy_met"] is True
    assert summary["accuracy"] == pytest.approx(trained["final_quality"], abs=1e-9)
    assert summary["accuracy"] >= config_lib.load("bert", TRAINED, {}).eval.target_value

    workload = registry.create(config_lib.load("bert", TRAINED, {}))
    samples = inference.load_eval_samples(workload)
    used = samples.labels != inference.UNUSED_SLOT
    words, counts = np.unique(samples.labels[used], return_counts=True)
    baseline = counts.max() / used.sum()  # always answering the most frequent masked word
    assert summary["accuracy"] > 2 * baseline

    rows = logs.read_accuracy_log(tmp_path, np.dtype(np.int32),
                                (workload.config.data.max_predictions_per_seq,))
    responses = np.stack([rows[i] for i in range(samples.count)])
    _, pred_counts = np.unique(responses[used], return_counts=True)
    # Not one answer for everything: 150 distinct ids measured. (Still, the mini trained to its
    # target answers one id for 85% of the masked words; its accuracy comes from the rest.)
    assert len(pred_counts) > 50 and pred_counts.max() < 0.95 * used.sum()

    params, state = (nn.unbox(v) for v in restore_variables(workdir, workload))
    model = workload.model()

    @jax.jit
    def logits(batch):
        out, _ = model.apply({"params": params, **state}, batch["input_ids"],
                             batch["input_mask"], batch["segment_ids"],
                             batch["masked_lm_positions"], train=False)
        return out

    def rows_of(lo, hi, size):
        idx = np.arange(lo, hi)
        idx = np.concatenate([idx, np.full(size - len(idx), lo)])
        return {k: v[idx] for k, v in samples.inputs.items()}

    n = samples.count
    at64 = np.concatenate([np.asarray(logits(rows_of(i, min(i + 64, n), 64)))[: min(64, n - i)]
                           for i in range(0, n, 64)])
    assert np.array_equal(responses, at64.argmax(-1))  # same executable size: exact
    at1 = np.concatenate([np.asarray(logits(rows_of(i, i + 1, 1))) for i in range(n)])
    assert np.abs(at1 - at64).max() < CROSS_BATCH_TOL / 10
    top2 = np.sort(at1, -1)[..., -2:]
    clear = (top2[..., 1] - top2[..., 0]) >= CROSS_BATCH_TOL
    assert np.array_equal(responses[clear], at1.argmax(-1)[clear])
