"""BERT (MLPerf v0.7 `bert`): size, checkpoint import, data paths, schedule, logs, mini target."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import runs
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import evaluation
from tpubench.errors import UsageError
from tpubench.loops import steps
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
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
    w = BertWorkload(_config("smoke", **{"model.init_checkpoint": str(directory / "model.ckpt-7")}))
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
    w = BertWorkload(_config("smoke", **{"model.init_checkpoint": str(directory / "model.ckpt-7")},
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


def test_end_learning_rate_is_the_floor_the_decay_reaches_and_keeps():
    """TF's polynomial_decay: (peak - end) * (1 - step / train_steps) ** power + end, held at
    `end` after train_steps; warmup unchanged (to the peak). Bites: the floor added on top of the
    decay (peak * (...) ** power + end: 1.11e-3 at step 100), or the step not clamped at
    train_steps (4.75e-4 at step 1,500 with power 2)."""
    w = BertWorkload(_config("smoke", **{
        "optimizer.learning_rate": 1e-3, "schedule.end_learning_rate": 3e-4,
        "schedule.warmup_steps": 100, "schedule.train_steps": 1000,
        "schedule.decay_power": 2.0}))
    got = [float(w.learning_rate(s)) for s in (50, 100, 500, 1000, 1500)]
    want = [1e-3 * 50 / 100, 7e-4 * 0.9 ** 2 + 3e-4, 7e-4 * 0.5 ** 2 + 3e-4, 3e-4, 3e-4]
    assert got == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("end", [-1e-4, 1e-3, 2e-3, float("nan")])
def test_end_learning_rate_outside_zero_to_the_peak_is_a_usage_error(end):
    """Checked before compute (check_data). Bites: no check (a floor at or above the peak makes
    the "decay" a rise), or one that lets the peak itself through."""
    w = BertWorkload(_config("smoke", **{"optimizer.learning_rate": 1e-3,
                                         "schedule.end_learning_rate": end}))
    with pytest.raises(UsageError, match="schedule.end_learning_rate"):
        w.check_data()


def test_full_config_evaluates_from_3m_samples_every_500k():
    c = _config("full")
    cadence = train.Cadence.from_config(c, c.data.train_samples)
    evals = [cadence.next_eval(0)]
    while len(evals) < 3:
        evals.append(cadence.next_eval(evals[-1]))
    # The first step at or after 3M, 3.5M, 4M samples (rules: "Starting at 3M samples, then
    # every 500K samples"). Google's JAX record evaluated at 372, 434, 496: every 507,904
    # samples, less often than the rule. Bites: a fixed 62-step interval from step 372.
    assert evals == [367, 428, 489]
    for j, step in enumerate(evals):
        assert (step - 1) * 8192 < 3_000_000 + j * 500_000 <= step * 8192
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
    w = BertWorkload(_config("smoke", **{"optimizer.learning_rate": 1.0,
                                         "optimizer.weight_decay": 0.5}))
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


def test_adamw_option_decays_like_adamw_and_skips_layer_norms_and_biases():
    """`optimizer.name="adamw"`: with zero gradients the update is -lr * weight_decay * param on
    kernels (AdamW's decoupled decay, no trust ratio) and zero on LayerNorms and biases; an
    unknown optimizer name is a usage error.
    Bites: dispatching "adamw" to LAMB (the kernel update is -lr * ||w||/||w|| * w = -w)."""
    w = BertWorkload(_config("smoke", **{"optimizer.name": "adamw",
                                         "optimizer.learning_rate": 1.0,
                                         "optimizer.weight_decay": 0.5}))
    params, _ = jax.jit(lambda r: nn.meta.unbox(w.init(r)))(jax.random.PRNGKey(0))
    tx = w.optimizer()
    updates, _ = jax.jit(
        lambda p: tx.update(jax.tree.map(jnp.zeros_like, p), tx.init(p), p)
    )(params)
    assert float(jnp.abs(updates["layer_0"]["output_layer_norm"]["scale"]).max()) == 0.0
    assert float(jnp.abs(updates["mlm_output_bias"]).max()) == 0.0
    kernel = params["layer_0"]["intermediate"]["kernel"]
    np.testing.assert_allclose(updates["layer_0"]["intermediate"]["kernel"], -0.5 * kernel,
                               rtol=1e-5)
    with pytest.raises(UsageError, match="optimizer.name='sgd'"):
        BertWorkload(_config("smoke", **{"optimizer.name": "sgd"})).check_data()


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


def test_masked_lm_prob_sets_the_share_of_masked_words():
    """`data.masked_lm_prob` reaches the workload's eval set: at 0.5 a seq-16 window (13 words)
    masks round(0.5 * its in-vocabulary words), up to `max_predictions_per_seq`; BERT's
    0.15 masks 2 of 13 (the one-pass figures in the mini docstring); outside (0, 1] it is a
    usage error.
    Bites: the workload not passing the key on (the eval set masks 2 words a window at 0.5)."""
    sizes = {"model.vocab_size": 1024, "data.max_seq_length": 16,
             "model.max_position_embeddings": 16, "data.max_predictions_per_seq": 7,
             "eval.samples": 600}
    half = BertWorkload(_config("mini", **sizes, **{"data.masked_lm_prob": 0.5}))
    half.check_data()
    ev = half._eval_examples
    assert ev["masked_lm_ids"].shape == (600, 7)
    ids = ev["input_ids"].copy()
    used = ev["masked_lm_weights"] > 0
    rows = np.broadcast_to(np.arange(600)[:, None], used.shape)
    ids[rows[used], ev["masked_lm_positions"][used]] = ev["masked_lm_ids"][used]
    in_vocab = (ids >= len(shakespeare.SPECIAL_TOKENS)).sum(1)
    np.testing.assert_array_equal(used.sum(1), np.minimum(7, np.maximum(1, np.round(in_vocab
                                                                                 * 0.5))))
    assert used.sum() > 5 * 600
    bert = BertWorkload(_config("mini", **sizes, **{"data.masked_lm_prob": 0.15}))
    assert float(bert._eval_examples["masked_lm_weights"].sum(1).max()) == 2.0
    with pytest.raises(UsageError, match="masked_lm_prob=1.5"):
        BertWorkload(_config("mini", **{"data.masked_lm_prob": 1.5})).check_data()


def test_mask_token_share_one_shows_mask_at_every_masked_word():
    """`data.mask_token_share` reaches the workload's eval set: at 1.0 every masked word is shown
    as [MASK] (the "+copy" shortcut is gone), with the same positions and words as the BERT 0.8
    masking (the same draws), under which ~80% are [MASK]; outside [0, 1] it is a usage error.
    Bites: the workload not passing the key on (tried: 80% [MASK] at 1.0)."""
    sizes = {"model.vocab_size": 1024, "data.max_seq_length": 16,
             "model.max_position_embeddings": 16, "data.max_predictions_per_seq": 7,
             "data.masked_lm_prob": 0.5, "eval.samples": 600}
    every = BertWorkload(_config("mini", **sizes, **{"data.mask_token_share": 1.0}))
    every.check_data()
    bert = BertWorkload(_config("mini", **sizes))

    def shown(ex):
        used = ex["masked_lm_weights"] > 0
        return np.take_along_axis(ex["input_ids"], ex["masked_lm_positions"], 1)[used]

    a, b = every._eval_examples, bert._eval_examples
    for k in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
        np.testing.assert_array_equal(a[k], b[k])
    assert a["masked_lm_weights"].sum() > 5 * 600
    assert (shown(a) == shakespeare.MASK).all()
    assert abs((shown(b) == shakespeare.MASK).mean() - 0.8) < 0.02
    with pytest.raises(UsageError, match="mask_token_share=1.5"):
        BertWorkload(_config("mini", **{"data.mask_token_share": 1.5})).check_data()


def test_eval_set_past_the_last_window_repeats_the_windows_under_fresh_masks():
    """Seq 16: 5,936 held-out windows of 13 words. Asking for two passes (11,872 examples)
    returns pass 1 unchanged (the one-pass set), then the same windows again (the same words in
    segment A) masked afresh; more than `MAX_EVAL_PASSES` passes is a usage error.
    Bites: pass 2 reusing pass 1's masks (np.tile of the one-pass set): no masked position
    moves."""
    corpus = shakespeare.ShakespeareCorpus(1024)
    one = shakespeare.eval_examples(corpus, 5936, 16, 2)
    two = shakespeare.eval_examples(corpus, 2 * 5936, 16, 2)
    for k in one:
        np.testing.assert_array_equal(two[k][:5936], one[k])

    def segment_a_words(ex):
        ids = ex["input_ids"].copy()
        rows = np.broadcast_to(np.arange(len(ids))[:, None], ids[:, :2].shape)
        used = ex["masked_lm_weights"] > 0
        ids[rows[used], ex["masked_lm_positions"][used]] = ex["masked_lm_ids"][used]
        return ids[:, 1:7]  # [CLS] then segment A: (16 - 3) // 2 = 6 words

    first, second = segment_a_words(two)[:5936], segment_a_words(two)[5936:]
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first[:3], corpus.eval_tokens[np.arange(3)[:, None] * 13
                                                               + np.arange(6)])
    moved = (two["masked_lm_positions"][:5936] != two["masked_lm_positions"][5936:]).any(1)
    assert moved.mean() > 0.8
    too_many = shakespeare.MAX_EVAL_PASSES * 5936 + 1
    with pytest.raises(UsageError, match="passes over the 5936 held-out windows"):
        shakespeare.eval_examples(corpus, too_many, 16, 2)


def test_masking_rate_and_80_10_10_split_on_a_big_batch():
    """On 4,096 hand-made rows of 64 tokens (words, plus [UNK]/specials that must never be
    chosen), `mask_tokens` picks round(15%) of each row's candidates (at most 10), reports the
    original ids at distinct positions, leaves every other position alone, and shows [MASK] /
    the word itself / a random word at 80% / 10% / 10% of the chosen positions.
    Bites: an 85/10/5 split (`r < 0.85` / `r < 0.95` in mask_tokens): [MASK] share 0.85."""
    rng = np.random.default_rng(0)
    vocab = 4096
    ids = rng.integers(5, vocab, (4096, 64)).astype(np.int32)
    ids[:, 0] = shakespeare.CLS
    ids[:, 31] = ids[:, 63] = shakespeare.SEP
    ids[rng.random(ids.shape) < 0.1] = shakespeare.UNK
    out = shakespeare.mask_tokens(np.random.default_rng(1), ids, 10, vocab)
    w = out["masked_lm_weights"].astype(bool)
    pos, labels, shown = out["masked_lm_positions"], out["masked_lm_ids"], out["input_ids"]
    candidates = (ids >= 5).sum(1)
    np.testing.assert_array_equal(
        w.sum(1), np.minimum(10, np.maximum(1, np.round(candidates * 0.15))))
    assert abs(w.sum() / candidates.sum() - 0.15) < 0.005
    np.testing.assert_array_equal(labels[w], np.take_along_axis(ids, pos, 1)[w])
    assert (labels[w] >= 5).all() and (labels[~w] == 0).all() and (pos[~w] == 0).all()
    for row in range(0, 4096, 97):  # distinct positions, used slots first
        assert len(set(pos[row][w[row]])) == w[row].sum() and w[row][: w[row].sum()].all()
    untouched = np.ones_like(ids, bool)
    rows = np.broadcast_to(np.arange(len(ids))[:, None], pos.shape)
    untouched[rows[w], pos[w]] = False
    np.testing.assert_array_equal(shown[untouched], ids[untouched])
    at = np.take_along_axis(shown, pos, 1)[w]
    is_mask, same = at == shakespeare.MASK, at == labels[w]
    other = ~is_mask & ~same
    n = w.sum()  # ~37,000 masked words: each share within ~4 standard errors
    assert abs(is_mask.mean() - 0.8) < 0.01, is_mask.mean()
    assert abs(same.mean() - 0.1) < 0.008, same.mean()
    assert abs(other.mean() - 0.1) < 0.008, other.mean()
    assert at[other].min() >= 5 and at[other].max() < vocab  # random words are real words
    assert n > 30_000


def test_training_batches_are_a_function_of_seed_and_step():
    """Bites: drawing the batch from a generator shared across steps."""
    corpus = shakespeare.ShakespeareCorpus(4096)
    b = shakespeare.train_examples(corpus, seed=0, step=3, batch=64, seq_len=64,
                                   max_predictions=10)
    again = shakespeare.train_examples(corpus, 0, 3, 64, 64, 10)
    other = shakespeare.train_examples(corpus, 0, 4, 64, 64, 10)
    np.testing.assert_array_equal(b["input_ids"], again["input_ids"])
    assert (b["input_ids"] != other["input_ids"]).mean() > 0.5


# ---- loss and accuracy on hand-made inputs ---------------------------------------------------
def _smoke_params(w):
    params, _ = jax.jit(lambda r: nn.meta.unbox(w.init(r)))(jax.random.PRNGKey(0))
    return params


def test_masked_lm_loss_at_init_is_log_vocab_over_used_slots():
    """At init (weights ~ N(0, 0.02)) the predictions are near uniform, so the masked-LM loss is
    log(64) and the next-sentence loss log(2); half the prediction slots are unused (weight 0),
    which must not dilute the average.
    Bites: normalising by the slot count instead of sum(weights) (measured 1.389 = log(64)/3)."""
    w = BertWorkload(_config("smoke"))
    params = _smoke_params(w)
    batch = w.synthetic_batch(jax.random.PRNGKey(1), 256)
    batch["masked_lm_weights"] = batch["masked_lm_weights"].at[:, 1:].set(0.0)
    _, (_, m) = jax.jit(w.loss)(params, {}, batch, jax.random.PRNGKey(2))
    assert float(m["masked_lm_loss"]) == pytest.approx(math.log(64), abs=0.02)
    assert float(m["next_sentence_loss"]) == pytest.approx(math.log(2), abs=0.02)
    assert float(m["loss"]) == pytest.approx(
        float(m["masked_lm_loss"]) + float(m["next_sentence_loss"]), rel=1e-6)


def _constant_prediction_params(w, bias):
    """Params whose masked-LM logits are `bias` at every position (the MLM transform's LayerNorm
    outputs zeros, so only the output bias is left)."""
    params = _smoke_params(w)
    params["mlm_layer_norm"] = jax.tree.map(jnp.zeros_like, params["mlm_layer_norm"])
    params["mlm_output_bias"] = jnp.asarray(bias, jnp.float32)
    return params


def test_accuracy_and_loss_on_a_hand_made_batch():
    """Logits fixed to a known vector (argmax = word 7): the training metrics and the eval sums
    (through the harness's masked eval path) count exactly the used slots of the real examples,
    and eval_finalize divides them.
    Bites: the harness's mask not applied to [B, slots] sums (7 correct counted instead of 4);
    the loss normalised by the slot count (1.889 instead of 2.518)."""
    w = BertWorkload(_config("smoke"))
    bias = np.linspace(0.0, 1.0, 64, dtype=np.float32)
    bias[7] = 3.0
    params = _constant_prediction_params(w, bias)
    batch = jax.tree.map(np.array, w.synthetic_batch(jax.random.PRNGKey(1), 4))
    batch["masked_lm_ids"] = np.array([[7, 7, 1], [7, 2, 7], [3, 3, 3], [7, 7, 7]], np.int32)
    batch["masked_lm_weights"] = np.array(
        [[1, 1, 0], [1, 1, 1], [1, 0, 0], [1, 1, 1]], np.float32)
    log_p = jax.nn.log_softmax(jnp.asarray(bias))
    # Training metrics over all 4 examples: correct 2 + 2 + 0 + 3 = 7 of 9 used slots.
    _, (_, m) = jax.jit(w.loss)(params, {}, batch, jax.random.PRNGKey(2))
    assert float(m["masked_lm_accuracy"]) == pytest.approx(7 / 9, rel=1e-5)
    want_loss = -(7 * log_p[7] + log_p[2] + log_p[3]) / 9
    assert float(m["masked_lm_loss"]) == pytest.approx(float(want_loss), rel=1e-5)
    # Eval: the last example is padding (mask 0): 4 correct of 6.
    batch["mask"] = np.array([1, 1, 1, 0], np.float32)
    out = jax.device_get(jax.jit(evaluation.eval_fn(w))(params, {}, batch))
    results = evaluation.accumulate([out])
    sums = results.sums
    assert sums["masked_lm_correct"] == 4.0 and sums["masked_lm_count"] == 6.0
    assert results.examples == 3.0 and sums["next_sentence_correct"] <= 3.0
    assert sums["masked_lm_loss_sum"] == pytest.approx(
        float(-(4 * log_p[7] + log_p[2] + log_p[3])), rel=1e-5)
    assert w.eval_finalize(results) == pytest.approx(4 / 6)


def test_simple_baselines_on_the_mini_eval_set():
    """The figures in the mini config's docstring, from `baselines/bert.py mlm` (the
    workload's own eval windows and masking; counts over the training plays), and the mini's
    target above the strongest of them.
    Bites: counts taken from the eval plays (tried on the earlier seq-64 mini's eval set:
    bidirectional 0.4912, not 0.1209)."""
    import importlib.util

    path = runs.REPO / "baselines" / "bert.py"
    spec = importlib.util.spec_from_file_location("baselines_bert", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    got = module.mlm_baselines(_config("mini"))
    want = {"most-frequent": 0.0459, "bigram": 0.0804, "trigram": 0.0840,
            "bidirectional": 0.0980, "markov": 0.0759, "most-frequent +copy": 0.1361,
            "markov +copy": 0.1607, "bidi-gap": 0.1097, "bidi-gap +copy": 0.1875,
            "bidi-gap +gated copy": 0.1889}
    assert {k: round(got[k], 4) for k in want} == want
    assert max(got, key=got.get) == "bidi-gap +gated copy"
    # 4 standard errors above the strongest plain baseline; above the gated copy (tuned on this
    # eval set, an upper bound of its kind) by more than 2.
    target = _config("mini").eval.target_value
    assert target >= got["bidi-gap +copy"] + 4 * 0.0011
    assert target >= got["bidi-gap +gated copy"] + 2 * 0.0011


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
        records[name] = [_mlperf_record(rng, c.data.max_seq_length, c.data.max_predictions_per_seq,
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
    w = BertWorkload(_config("smoke", **{"data.source": "tfrecord", "data.dir": str(directory)}))
    from_zero = w.train_batches(0, 0, 1)
    next(from_zero)
    second = next(from_zero)
    resumed = next(w.train_batches(1, 0, 1))
    for k in second:
        np.testing.assert_array_equal(second[k], resumed[k])


def test_missing_tfrecords_is_a_usage_error(tmp_path):
    w = BertWorkload(_config("full", **{"data.dir": str(tmp_path)}))
    with pytest.raises(UsageError, match="create_pretraining_data.py"):
        w.check_data()


# ---- one train + one eval step through the harness, per data source ---------------------------
def _direct_accuracy(w, params, batches) -> float:
    """Masked-LM accuracy of `params` on `batches`, from the model's logits in numpy."""
    correct = count = 0.0
    for batch in batches:
        mlm, _ = w.model().apply({"params": params}, batch["input_ids"], batch["input_mask"],
                                 batch["segment_ids"], batch["masked_lm_positions"])
        mask = batch.get("mask", np.ones(len(batch["input_ids"]), np.float32))
        weights = batch["masked_lm_weights"] * mask[:, None]
        correct += float(((np.argmax(mlm, -1) == batch["masked_lm_ids"]) * weights).sum())
        count += float(weights.sum())
    return correct / count


def test_smoke_synthetic_one_train_and_eval_step(tmp_path):
    """One step moves the params, and the reported quality is the checkpoint's accuracy on the
    harness's synthetic eval batches, recomputed here from the logits.
    The synthetic eval batches are the workload's own `synthetic_batch` (random ids over the
    vocabulary), so the accuracy is ~1/vocab: the recompute checks the eval path runs on these
    params; the moved params are the real check.
    Bites: a zero learning rate (learning_rate() x 0): no param moves."""
    from tpubench.loops import checkpoint
    from tpubench.loops import feed as data

    s = _run(tmp_path, "smoke")
    assert (s["status"], s["steps"], len(s["quality_history"])) == ("aborted", 1, 1)
    assert s["error"] is None
    w = BertWorkload(_config("smoke"))
    params, _ = checkpoint.restore_variables(tmp_path / "run", w)
    init = _smoke_params(w)
    moved = jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()), params, init)
    assert min(jax.tree.leaves(moved)) > 0.0  # every tensor took the step (LAMB: ~lr * norm)
    batches = list(data.synthetic_eval_batches(w, 2, 1))
    assert s["final_quality"] == pytest.approx(_direct_accuracy(w, params, batches), abs=1e-6)


def test_smoke_mock_mlperf_tfrecords_one_train_and_eval_step(tmp_path, mlperf_tfrecords):
    """The reported quality is the checkpoint's accuracy on the 6 eval records (12 masked
    slots; 8 eval samples asked, so the second batch of 4 is half padding), recomputed here.
    Bites: eval_step ignoring the example mask (the padded copies counted: 0.0625, not 0.0833)."""
    from tpubench.loops import checkpoint

    directory, _ = mlperf_tfrecords
    s = _run(tmp_path, "smoke", **{"data.source": "tfrecord", "data.dir": str(directory)})
    assert (s["status"], s["steps"], s["data_source"]) == ("aborted", 1, "tfrecord")
    assert s["error"] is None
    w = BertWorkload(_config("smoke", **{"data.source": "tfrecord", "data.dir": str(directory)}))
    params, _ = checkpoint.restore_variables(tmp_path / "run", w)
    records = input_pipeline.read_tfrecords([str(directory / "eval_10k")], 16, 3)
    assert s["final_quality"] == pytest.approx(_direct_accuracy(w, params, [records]), abs=1e-6)


# ---- compliance ---------------------------------------------------------------------------------
def test_full_config_log_fails_only_the_quality_target(tmp_path):
    """The full config at its logged values (global batch 8192, 10,000 eval samples, LAMB
    hyperparameters) for one step of a shrunken model on synthetic data."""
    c = _config("full")  # raw apply_overrides: keep the closed label, so closed checks apply
    config_lib.apply_overrides(c, {
        "data.source": "synthetic", "model.init_checkpoint": "", "data.max_seq_length": 16,
        "data.max_predictions_per_seq": 2, "eval.batch_size": 2000, "eval.offset_samples": 0,
        "eval.every_samples": 8192, "run.max_train_samples": 8192, "run.steps_per_dispatch": 1,
        "model.vocab_size": 128, "model.hidden_size": 16, "model.num_hidden_layers": 1,
        "model.num_attention_heads": 1, "model.intermediate_size": 32,
        "model.max_position_embeddings": 16})
    s = train.train_and_evaluate(c, tmp_path / "run")
    result = mllog.check_compliance(s["mlperf_log"])
    assert not result.valid
    assert result.failed_checks() == QUALITY_FAILURE


def test_mini_log_fails_only_the_mlperf_quality_target(tmp_path):
    """Open division still requires MLPerf's 0.712 masked-LM accuracy, which a Shakespeare mini
    cannot log; every other check passes (the real mini config cut to one 50-step block and
    one eval of its first pass, 5,936 windows: its own first eval comes at step 1,000)."""
    s = _run(tmp_path, "mini", **{"eval.offset_samples": 0, "eval.every_samples": 50 * 128,
                                  "run.max_train_samples": 50 * 128, "eval.samples": 5936})
    assert s["status"] == "aborted"
    result = mllog.check_compliance(s["mlperf_log"])
    assert result.failed_checks() == [
        "WARNING -  Failed checks for eval_accuracy : v['value'] >= 0.712 and v['value'] < 1.0",
        "ERROR - FAILED",
    ]


# ---- mini time to quality, in steps -----------------------------------------------------------
# The step of the first eval (steps 1,000, 1,100, ...) at or above the target, per seed; the runs
# are deterministic on CPU (harness runs, see the mini config's docstring).
MINI_TARGET_STEP = {0: 1500, 1: 1600}


@pytest.mark.slow
# Both seeds run with --extended: seed 0 alone took 409 s of a 2-worker default run (suite
# budget ~25 min on 2 cores). In the default run, BERT's convergence is proven by
# `mini_seq64` trained to its target (tests/test_infer_bert.py's `trained_bert`: same model
# code, masking and eval at sequence 64, 300 steps, more than 2x its baseline).
@pytest.mark.extended
@pytest.mark.parametrize("seed", [0, 1])
def test_mini_reaches_its_target_at_the_measured_step(tmp_path, seed):
    """Step budget, not wall clock: the mini must reach its target (above every count baseline
    on its eval set, see its docstring) at the measured eval, give or take one eval (100 steps).
    Bites (tried as a harness run of the same config, not through pytest): `mask_tokens`
    showing [MASK] at every masked word (no 10% unchanged / 10% random words; the same draws)
    stays below 0.109 through step 2,000, so the run ends `aborted` at step 1,600."""
    want = MINI_TARGET_STEP[seed]
    s = runs.train_bert_mini(tmp_path / "run", seed=seed,
                             **{"run.max_train_samples": (want + 100) * 128})
    steps_seen = [h["samples"] // 128 for h in s["quality_history"]]
    assert s["status"] == "success", s["quality_history"]
    assert abs(s["steps"] - want) <= 100, (s["steps"], s["quality_history"])
    assert s["final_quality"] >= _config("mini").eval.target_value
    assert steps_seen == list(range(1000, s["steps"] + 1, 100))
