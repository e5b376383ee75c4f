"""BERT (MLPerf v0.7 `bert`): size, checkpoint import, data paths, schedule, logs, mini target."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import mllog, steps, train
from tpubench.errors import UsageError
from workloads.bert import input_pipeline, shakespeare
from workloads.bert.workload import BertWorkload

QUALITY_FAILURE = [
    "WARNING -  Failed checks for eval_accuracy : "
    "(v['value'] >= 0.712 if s['global_batch_size'] < 8192 else v['value'] >= 0.706) "
    "and v['value'] < 1.0",
    "ERROR - FAILED",
]


def _config(name: str, **overrides):
    return config_lib.load("bert", name, overrides)


def _run(tmp_path, name: str, **overrides) -> dict:
    return train.train_and_evaluate(_config(name, **overrides), tmp_path / "run")


# ---- size ---------------------------------------------------------------------------------------
def test_full_config_has_bert_large_parameter_count():
    """Embeddings 30522*1024 + 512*1024 + 2*1024 + LN 2*1024 = 31,782,912; per layer
    Q,K,V 3*(1024*16*64 + 16*64) + out 1024*1024 + 1024 + FFN 1024*4096 + 4096 + 4096*1024 + 1024
    + 2 LN 4*1024 = 12,596,224, x24 = 302,309,376; pooler 1024*1024 + 1024 = 1,049,600; MLM head
    transform 1,049,600 + LN 2,048 + output bias 30,522 (decoder tied to the word embeddings);
    NSP 1024*2 + 2 = 2,050. Total 336,226,108 (reference: ~336M)."""
    count = steps.param_count(BertWorkload(_config("full")))
    assert count == 336_226_108
    assert abs(count - 336e6) / 336e6 < 0.01


# ---- TF checkpoint import -----------------------------------------------------------------------
def _tf_bert_variables(rng: np.random.Generator, m) -> dict[str, np.ndarray]:
    """TF1 BERT variables (Google `modeling.py` names and layouts) with random values."""
    h, i, v = m.hidden_size, m.intermediate_size, m.vocab_size
    shapes = {
        "bert/embeddings/word_embeddings": (v, h),
        "bert/embeddings/position_embeddings": (m.max_position_embeddings, h),
        "bert/embeddings/token_type_embeddings": (m.type_vocab_size, h),
        "bert/embeddings/LayerNorm/gamma": (h,), "bert/embeddings/LayerNorm/beta": (h,),
        "bert/pooler/dense/kernel": (h, h), "bert/pooler/dense/bias": (h,),
        "cls/predictions/transform/dense/kernel": (h, h),
        "cls/predictions/transform/dense/bias": (h,),
        "cls/predictions/transform/LayerNorm/gamma": (h,),
        "cls/predictions/transform/LayerNorm/beta": (h,),
        "cls/predictions/output_bias": (v,),
        "cls/seq_relationship/output_weights": (2, h),
        "cls/seq_relationship/output_bias": (2,),
    }
    for n in range(m.num_hidden_layers):
        p = f"bert/encoder/layer_{n}"
        for proj in ("query", "key", "value"):
            shapes[f"{p}/attention/self/{proj}/kernel"] = (h, h)
            shapes[f"{p}/attention/self/{proj}/bias"] = (h,)
        shapes.update({
            f"{p}/attention/output/dense/kernel": (h, h), f"{p}/attention/output/dense/bias": (h,),
            f"{p}/attention/output/LayerNorm/gamma": (h,),
            f"{p}/attention/output/LayerNorm/beta": (h,),
            f"{p}/intermediate/dense/kernel": (h, i), f"{p}/intermediate/dense/bias": (i,),
            f"{p}/output/dense/kernel": (i, h), f"{p}/output/dense/bias": (h,),
            f"{p}/output/LayerNorm/gamma": (h,), f"{p}/output/LayerNorm/beta": (h,),
        })
    return {k: (rng.normal(size=s) * 0.5).astype(np.float32) for k, s in shapes.items()}


def _write_tf1_checkpoint(prefix: str, variables: dict[str, np.ndarray]) -> None:
    import tensorflow as tf

    with tf.Graph().as_default():
        for name, value in variables.items():
            tf.compat.v1.get_variable(name, initializer=tf.constant(value))
        # What a real pre-training checkpoint also holds; the loader must ignore it.
        tf.compat.v1.get_variable("bert/pooler/dense/kernel/adam_m",
                                  initializer=tf.zeros_like(variables["bert/pooler/dense/kernel"]))
        tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(sess, prefix)


def _numpy_bert(t: dict[str, np.ndarray], batch: dict[str, np.ndarray], m):
    """Google BERT's forward pass in numpy, straight from the TF variables."""

    def ln(x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * t[f"{name}/gamma"] + t[f"{name}/beta"]

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))

    def dense(x, name):
        return x @ t[f"{name}/kernel"] + t[f"{name}/bias"]

    ids, seg = batch["input_ids"], batch["segment_ids"]
    b, s = ids.shape
    nh, hd = m.num_attention_heads, m.hidden_size // m.num_attention_heads
    x = (t["bert/embeddings/word_embeddings"][ids] + t["bert/embeddings/position_embeddings"][:s]
         + t["bert/embeddings/token_type_embeddings"][seg])
    x = ln(x, "bert/embeddings/LayerNorm")
    mask_bias = (1.0 - batch["input_mask"][:, None, None, :]) * -10000.0
    for n in range(m.num_hidden_layers):
        p = f"bert/encoder/layer_{n}"
        q, k, v = (dense(x, f"{p}/attention/self/{w}").reshape(b, s, nh, hd)
                   for w in ("query", "key", "value"))
        scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd) + mask_bias
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = np.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, nh * hd)
        x = ln(x + dense(ctx, f"{p}/attention/output/dense"), f"{p}/attention/output/LayerNorm")
        h = dense(gelu(dense(x, f"{p}/intermediate/dense")), f"{p}/output/dense")
        x = ln(x + h, f"{p}/output/LayerNorm")
    pooled = np.tanh(dense(x[:, 0], "bert/pooler/dense"))
    nsp = pooled @ t["cls/seq_relationship/output_weights"].T
    nsp = nsp + t["cls/seq_relationship/output_bias"]
    h = np.take_along_axis(x, batch["masked_lm_positions"][..., None], axis=1)
    h = ln(gelu(dense(h, "cls/predictions/transform/dense")), "cls/predictions/transform/LayerNorm")
    mlm = h @ t["bert/embeddings/word_embeddings"].T + t["cls/predictions/output_bias"]
    return mlm, nsp


@pytest.fixture(scope="module")
def tf_checkpoint_dir(tmp_path_factory):
    """A tiny TF1 BERT checkpoint (smoke sizes) + bert_config.json, written here."""
    m = _config("smoke").model
    directory = tmp_path_factory.mktemp("tf_ckpt")
    variables = _tf_bert_variables(np.random.default_rng(0), m)
    _write_tf1_checkpoint(str(directory / "model.ckpt-7"), variables)
    (directory / "bert_config.json").write_text(json.dumps(m.to_dict()))
    return directory, variables


def test_tf_checkpoint_values_drive_the_flax_forward_pass(tf_checkpoint_dir):
    directory, variables = tf_checkpoint_dir
    w = BertWorkload(_config("smoke", init_checkpoint=str(directory / "model.ckpt-7")))
    w.check_data()
    params, _ = jax.jit(lambda r: nn.meta.unbox(w.init(r)))(jax.random.PRNGKey(1))
    np.testing.assert_array_equal(
        params["embeddings"]["word_embeddings"]["embedding"],
        variables["bert/embeddings/word_embeddings"])
    np.testing.assert_array_equal(
        params["layer_1"]["attention"]["query"]["kernel"].reshape(32, 32),
        variables["bert/encoder/layer_1/attention/self/query/kernel"])

    batch = jax.tree.map(np.array, w.synthetic_batch(jax.random.PRNGKey(2), 3))
    batch["input_mask"][:, -4:] = 0  # padded keys must be ignored the same way
    mlm, nsp = w.model().apply({"params": params}, batch["input_ids"], batch["input_mask"],
                               batch["segment_ids"], batch["masked_lm_positions"])
    want_mlm, want_nsp = _numpy_bert(variables, batch, w.config.model)
    np.testing.assert_allclose(nsp, want_nsp, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mlm, want_mlm, rtol=1e-4, atol=1e-4)


def test_checkpoint_with_other_sizes_is_a_usage_error(tf_checkpoint_dir):
    directory, _ = tf_checkpoint_dir
    w = BertWorkload(_config("smoke", init_checkpoint=str(directory / "model.ckpt-7"),
                             **{"model.hidden_size": 64}))
    with pytest.raises(UsageError, match="hidden_size: checkpoint 32 vs config 64"):
        w.check_data()


# ---- schedule, cadence, log keys ----------------------------------------------------------------
def test_full_config_learning_rate_follows_the_reference_schedule():
    w = BertWorkload(_config("full"))
    base = 0.00288293
    # Warmup counts from start_warmup_step = -76 over 287 steps; decay counts from step 0.
    assert float(w.learning_rate(0)) == pytest.approx(base * 76 / 287, rel=1e-6)
    assert float(w.learning_rate(210)) == pytest.approx(base * 286 / 287, rel=1e-6)
    assert float(w.learning_rate(211)) == pytest.approx(base * (1 - 211 / 560), rel=1e-6)
    assert float(w.learning_rate(560)) == 0.0


def test_full_config_evaluates_from_3m_samples_every_500k():
    c = _config("full")
    cadence = train.Cadence.from_config(c, c.train_samples)
    evals = [cadence.next_eval(0)]
    while len(evals) < 3:
        evals.append(cadence.next_eval(evals[-1]))
    assert evals == [372, 434, 496]  # the steps Google's JAX record evaluated at
    # The first multiple of the eval interval at or past 3M samples.
    assert (evals[0] - 62) * 8192 < 3_000_000 <= evals[0] * 8192
    assert (evals[1] - evals[0]) * 8192 >= 500_000 > (evals[1] - evals[0] - 1) * 8192
    assert cadence.steps_per_dispatch == 31


def test_full_config_logs_google_jax_record_hyperparameters():
    assert BertWorkload(_config("full")).mllog_hyperparameters() == {
        "global_batch_size": 8192, "opt_base_learning_rate": 0.00288293, "opt_epsilon": 1e-6,
        "opt_learning_rate_training_steps": 560, "opt_learning_rate_warmup_steps": 287,
        "num_warmup_steps": 287, "start_warmup_step": -76, "opt_lamb_beta_1": 0.88,
        "opt_lamb_beta_2": 0.88, "opt_lamb_weight_decay_rate": 0.0166629,
        "opt_lamb_learning_rate_decay_poly_power": 1.0, "max_sequence_length": 512,
        "max_predictions_per_seq": 76,
    }


def test_lamb_does_not_decay_layer_norms_and_biases():
    w = BertWorkload(_config("smoke", learning_rate=1.0, lamb_weight_decay=0.5))
    params, _ = jax.jit(lambda r: nn.meta.unbox(w.init(r)))(jax.random.PRNGKey(0))
    tx = w.optimizer()
    # With zero gradients the only update left is LAMB's (masked) weight decay.
    updates, _ = jax.jit(
        lambda p: tx.update(jax.tree.map(jnp.zeros_like, p), tx.init(p), p)
    )(params)
    assert float(jnp.abs(updates["layer_0"]["output_layer_norm"]["scale"]).max()) == 0.0
    assert float(jnp.abs(updates["layer_0"]["intermediate"]["bias"]).max()) == 0.0
    assert float(jnp.abs(updates["mlm_output_bias"]).max()) == 0.0
    kernel = params["layer_0"]["intermediate"]["kernel"]
    np.testing.assert_allclose(updates["layer_0"]["intermediate"]["kernel"], -kernel, rtol=1e-5)


# ---- data ---------------------------------------------------------------------------------------
def test_shakespeare_split_vocab_and_baseline():
    corpus = shakespeare.ShakespeareCorpus(4096)
    assert len(corpus.vocab) == 4096 and corpus.vocab[:5] == shakespeare.SPECIAL_TOKENS
    assert len(corpus.train_tokens) + len(corpus.eval_tokens) == 832_029
    assert len(corpus.eval_tokens) == 77_182  # the four held-out plays
    ev = shakespeare.eval_examples(corpus, 1024, 64, 10)
    again = shakespeare.eval_examples(corpus, 1024, 64, 10)
    for k in ev:
        np.testing.assert_array_equal(ev[k], again[k])
    weights = ev["masked_lm_weights"]
    hits = (ev["masked_lm_ids"] == corpus.most_frequent_word) * weights
    assert corpus.vocab[corpus.most_frequent_word] == "the"
    assert float(hits.sum() / weights.sum()) == pytest.approx(0.0418, abs=5e-4)


def test_masking_targets_real_words_and_hides_them():
    corpus = shakespeare.ShakespeareCorpus(4096)
    b = shakespeare.train_examples(corpus, seed=0, step=3, batch=256, seq_len=64,
                                   max_predictions=10)
    w = b["masked_lm_weights"].astype(bool)
    assert w.sum(1).min() >= 7 and w.sum(1).max() <= 10
    assert (b["masked_lm_ids"][w] >= 5).all()  # never [PAD]/[UNK]/[CLS]/[SEP]/[MASK]
    shown = np.take_along_axis(b["input_ids"], b["masked_lm_positions"], 1)[w]
    assert 0.75 < (shown == shakespeare.MASK).mean() < 0.85
    again = shakespeare.train_examples(corpus, 0, 3, 256, 64, 10)
    np.testing.assert_array_equal(b["input_ids"], again["input_ids"])


def _mlperf_record(rng: np.random.Generator, seq: int, preds: int, vocab: int) -> bytes:
    import tensorflow as tf

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    n = int(rng.integers(seq // 2, seq + 1))
    feature = {
        "input_ids": ints(list(rng.integers(0, vocab, n)) + [0] * (seq - n)),
        "input_mask": ints([1] * n + [0] * (seq - n)),
        "segment_ids": ints([0] * (n // 2) + [1] * (n - n // 2) + [0] * (seq - n)),
        "masked_lm_positions": ints(list(range(1, preds)) + [0]),
        "masked_lm_ids": ints(list(rng.integers(0, vocab, preds - 1)) + [0]),
        "masked_lm_weights": tf.train.Feature(
            float_list=tf.train.FloatList(value=[1.0] * (preds - 1) + [0.0])),
        "next_sentence_labels": ints([int(rng.integers(0, 2))]),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.fixture(scope="module")
def mlperf_tfrecords(tmp_path_factory):
    """Mock data: MLPerf-layout TFRecords (2 train shards of 6, an eval file of 6), smoke sizes.
    tfds has no MLPerf BERT builder, so the real tf.data reader runs on records written here."""
    import tensorflow as tf

    c = _config("smoke")
    directory = tmp_path_factory.mktemp("bert_records")
    rng = np.random.default_rng(0)
    records = {}
    for name in ("part-00000-of-00002", "part-00001-of-00002", "eval_10k"):
        records[name] = [_mlperf_record(rng, c.max_seq_length, c.max_predictions_per_seq,
                                        c.model.vocab_size) for _ in range(6)]
        with tf.io.TFRecordWriter(str(directory / name)) as writer:
            for r in records[name]:
                writer.write(r)
    return directory, records


def test_tfrecord_reader_returns_the_written_features(mlperf_tfrecords):
    import tensorflow as tf

    directory, records = mlperf_tfrecords
    got = input_pipeline.read_tfrecords([str(directory / "eval_10k")], 16, 3)
    first = tf.train.Example.FromString(records["eval_10k"][0]).features.feature
    np.testing.assert_array_equal(got["input_ids"][0], first["input_ids"].int64_list.value)
    np.testing.assert_array_equal(got["masked_lm_weights"][0], [1.0, 1.0, 0.0])
    assert got["next_sentence_labels"].shape == (6,)
    assert got["next_sentence_labels"][0] == first["next_sentence_labels"].int64_list.value[0]
    assert {k: v.dtype for k, v in got.items()} == {
        k: (np.float32 if k == "masked_lm_weights" else np.int32) for k in got}


def test_tfrecord_train_batches_resume_at_a_step(mlperf_tfrecords):
    directory, _ = mlperf_tfrecords
    w = BertWorkload(_config("smoke", data_source="tfrecord", data_dir=str(directory)))
    from_zero = w.train_batches(0, 0, 1)
    next(from_zero)
    second = next(from_zero)
    resumed = next(w.train_batches(1, 0, 1))
    for k in second:
        np.testing.assert_array_equal(second[k], resumed[k])


def test_missing_tfrecords_is_a_usage_error(tmp_path):
    w = BertWorkload(_config("full", data_dir=str(tmp_path)))
    with pytest.raises(UsageError, match="create_pretraining_data.py"):
        w.check_data()


# ---- one train + one eval step through the harness, per data source ---------------------------
def test_smoke_synthetic_one_train_and_eval_step(tmp_path):
    s = _run(tmp_path, "smoke")
    assert (s["status"], s["steps"], len(s["quality_history"])) == ("aborted", 1, 1)
    assert 0.0 <= s["final_quality"] <= 1.0 and s["error"] is None


def test_smoke_mock_mlperf_tfrecords_one_train_and_eval_step(tmp_path, mlperf_tfrecords):
    directory, _ = mlperf_tfrecords
    s = _run(tmp_path, "smoke", data_source="tfrecord", data_dir=str(directory))
    assert (s["status"], s["steps"], s["data_source"]) == ("aborted", 1, "tfrecord")
    assert 0.0 <= s["final_quality"] <= 1.0 and s["error"] is None


# ---- compliance ---------------------------------------------------------------------------------
def test_full_config_log_fails_only_the_quality_target(tmp_path):
    """The full config at its logged values (global batch 8192, 10,000 eval samples, LAMB
    hyperparameters) for one step of a shrunken model on synthetic data."""
    c = _config("full")  # raw apply_overrides: keep the closed label, so closed checks apply
    config_lib.apply_overrides(c, dict(
        data_source="synthetic", init_checkpoint="",
        max_seq_length=16, max_predictions_per_seq=2, eval_batch_size=2000,
        eval_offset_samples=0, eval_every_samples=8192, max_train_samples=8192,
        steps_per_dispatch=1, **{"model.vocab_size": 128, "model.hidden_size": 16,
                                 "model.num_hidden_layers": 1,
                                 "model.num_attention_heads": 1,
                                 "model.intermediate_size": 32,
                                 "model.max_position_embeddings": 16}))
    s = train.train_and_evaluate(c, tmp_path / "run")
    result = mllog.check_compliance(s["mlperf_log"])
    assert not result.valid
    assert result.failed_checks() == QUALITY_FAILURE


def test_mini_log_fails_only_the_mlperf_quality_target(tmp_path):
    """Open division still requires MLPerf's 0.712 masked-LM accuracy, which a Shakespeare mini
    cannot log; every other check passes (one eval block of the real mini config)."""
    c = _config("mini")
    s = _run(tmp_path, "mini", max_train_samples=c.eval_every_samples)
    assert s["status"] == "aborted"
    result = mllog.check_compliance(s["mlperf_log"])
    assert result.failed_checks() == [
        "WARNING -  Failed checks for eval_accuracy : v['value'] >= 0.712 and v['value'] < 1.0",
        "ERROR - FAILED",
    ]


# ---- mini time to quality -----------------------------------------------------------------------
@pytest.mark.slow
def test_mini_reaches_its_target(tmp_path):
    s = _run(tmp_path, "mini")
    assert s["status"] == "success", s["quality_history"]
    assert s["final_quality"] >= _config("mini").target_value
    assert math.isfinite(s["time_to_target_s"])
