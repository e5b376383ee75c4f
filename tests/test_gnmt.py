"""GNMT (MLPerf `gnmt`): model size and maths, the reference's beam search, schedule, loss, logs."""

import functools
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.datasets import prepared_text as prepared
from tpubench.errors import UsageError
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
from tpubench.text import ids
from workloads.gnmt import decode
from workloads.gnmt import model as gnmt_model
from workloads.gnmt.workload import GNMTWorkload, smoothed_xent

QUALITY_FAILURE = [
    "WARNING -  Failed checks for eval_accuracy : v['value'] >= 0.240 and v['value'] < 1",
    "ERROR - FAILED",
]
CLOSED_GNMT_KEYS = (  # mlperf-logging 0.7.0 closed_gnmt.yaml, EXACTLY_ONE keys
    "global_batch_size", "opt_base_learning_rate", "opt_learning_rate_alt_decay_func",
    "opt_learning_rate_decay_factor", "opt_learning_rate_decay_interval",
    "opt_learning_rate_decay_steps", "opt_learning_rate_remain_steps", "max_sequence_length",
    "opt_learning_rate_alt_warmup_func", "opt_learning_rate_warmup_steps")


def _config(name, **overrides):
    c = config_lib.load("gnmt", name)
    config_lib.apply_overrides(c, overrides)
    return c


def _tiny(**kw):
    cfg = dict(vocab_size=11, hidden_size=6, num_layers=4, dropout_rate=0.0)
    cfg.update(kw)
    return gnmt_model.GNMT(gnmt_model.GNMTConfig(**cfg))


# ---- model ------------------------------------------------------------------------------------
def test_full_config_has_the_reference_parameter_count():
    """160,671,297 parameters at vocabulary 32,320 (NVIDIA apex's GNMT tests: "MLPerf GNMT has
    160671297 parameters"), counted from abstract shapes only.
    Bites: a single LSTM bias (flax's LSTMCell; b_hh dropped) instead of PyTorch's two."""
    w = GNMTWorkload(_config("full"))
    params = nn.meta.unbox(jax.eval_shape(w.init, jax.random.PRNGKey(0))[0])
    count = sum(math.prod(p.shape) for p in jax.tree.leaves(params))
    assert count == 160_671_297 == gnmt_model.reference_param_count(32320)
    names = jax.tree.leaves(jax.eval_shape(w.init, jax.random.PRNGKey(0))[0],
                            is_leaf=lambda x: isinstance(x, nn.Partitioned))
    assert all(len(p.names) == len(p.value.shape) for p in names)


def _np_lstm(x, w_ih, w_hh, b_ih, b_hh):
    """PyTorch nn.LSTM's equations, one step at a time (gates i, f, g, o)."""
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))  # noqa: E731
    h = c = np.zeros((x.shape[0], w_hh.shape[0]))
    out = []
    for t in range(x.shape[1]):
        i, f, g, o = np.split(x[:, t] @ w_ih + b_ih + h @ w_hh + b_hh, 4, axis=-1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        out.append(h)
    return np.stack(out, 1)


def test_lstm_layer_is_pytorchs_lstm():
    """Bites: swapping the input and forget gates."""
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32)
    layer = gnmt_model.LSTM(4)
    params = nn.meta.unbox(layer.init(jax.random.PRNGKey(0), x))["params"]
    ys, (h, _) = layer.apply({"params": params}, x)
    want = _np_lstm(x, *(np.asarray(params[k], np.float64)
                         for k in ("w_ih", "w_hh", "b_ih", "b_hh")))
    np.testing.assert_allclose(ys, want, atol=1e-5)
    np.testing.assert_allclose(h, want[:, -1], atol=1e-5)


def test_encoder_ignores_padding_and_reads_sources_backward_from_their_last_token():
    """As pack_padded_sequence: more padding leaves every real position's encoding unchanged
    (the backward direction starts at each source's last real token), and word order matters.
    Bites: reversing the padded row (jnp.flip) instead of each source within its length."""
    model = _tiny()
    src = jnp.array([[5, 6, 7, 1, 0, 0]], jnp.int32)
    params = jax.jit(model.init)(jax.random.PRNGKey(0), src, src[:, :2])["params"]
    encode = jax.jit(functools.partial(model.apply, method=gnmt_model.GNMT.encode))
    short = encode({"params": params}, src)
    longer = encode({"params": params}, jnp.pad(src, ((0, 0), (0, 5))))
    np.testing.assert_allclose(longer[:, :4], short[:, :4], atol=1e-6)
    flipped = encode({"params": params}, jnp.array([[7, 6, 5, 1, 0, 0]], jnp.int32))
    assert not np.allclose(flipped[:, :4], short[:, :4], atol=1e-5)


def test_attention_is_normalized_bahdanau_and_masks_padding():
    """Scores g * v/|v| . tanh(W_q q + W_k k + b): scaling v changes nothing, padded source
    positions get zero weight, weights sum to one. Bites: dropping the v normalization."""
    att = gnmt_model.BahdanauAttention(4)
    rng = np.random.default_rng(1)
    q, enc = (jnp.asarray(rng.normal(size=s), jnp.float32) for s in ((2, 3, 4), (2, 5, 4)))
    mask = jnp.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    params = att.init(jax.random.PRNGKey(0), q, enc, enc, mask)["params"]
    params = nn.meta.unbox(params)

    def run(p):
        keys = att.apply({"params": p}, enc, method=att.keys)
        return att.apply({"params": p}, q, enc, keys, mask)

    ctx, w = run(params)
    ctx2, w2 = run({**params, "v": params["v"] * 7.0})
    np.testing.assert_allclose(w2, w, atol=1e-6)
    np.testing.assert_allclose(w[0, :, 3:], 0.0, atol=1e-12)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(ctx, jnp.einsum("bts,bsn->btn", w, enc), atol=1e-5)


def _init_ranges(name, **overrides):
    """(largest |weight| outside the attention, the attention's g) of config `name` at hidden
    16, vocabulary 50 (the init rules do not depend on the size beyond g = 1/sqrt(hidden))."""
    c = _config(name, **{"model.hidden_size": 16, "model.vocab_size": 50, **overrides})
    params = nn.meta.unbox(jax.jit(GNMTWorkload(c).init)(jax.random.PRNGKey(0))[0])
    leaves = [(jax.tree_util.keystr(path), np.abs(leaf).max())
              for path, leaf in jax.tree_util.tree_leaves_with_path(params)]
    rest = [top for path, top in leaves if "attention" not in path and "b_hh" not in path]
    b_hh = [top for path, top in leaves if "b_hh" in path]
    att = [top for path, top in leaves if "attention" in path
           and not path.endswith(("['g']", "['b']"))]
    return {"top": float(max(rest)), "low": float(min(rest)), "g": float(params["attention"]["g"]),
            "b_hh": float(max(b_hh)), "n_b_hh": len(b_hh), "att": sorted(map(float, att))}


def test_init_is_the_references_unless_a_config_scales_it():
    """The full config initializes as the reference (mlcommons/training v0.7
    rnn_translator/pytorch/seq2seq): every LSTM weight and b_ih, the embedding and the classifier
    U(+-0.1), every LSTM's b_hh zeros (utils.py `init_lstm_`: `init.zeros_(lstm.bias_hh_l0)`),
    the attention's W_q, W_k and v U(+-0.1) (models/attention.py: `init_weight=0.1`, not passed
    by decoder.py) and its g = 1/sqrt(hidden) (`normalize_scalar.data.fill_(stdv)`); the mini's
    `model.init_weight` and `model.attention_scale` (configs/mini.py) reach every LSTM,
    embedding and classifier weight and g. Bites: b_hh drawn U(+-0.1); the attention at
    nn.Linear's U(+-1/sqrt(hidden)) = U(+-0.25) here; a module keeping the constant
    INIT_WEIGHT, or the attention ignoring its scale."""
    full = _init_ranges("full")
    assert 0.09 < full["low"] <= full["top"] <= 0.1 and full["g"] == pytest.approx(0.25)
    assert full["n_b_hh"] == 9 and full["b_hh"] == 0.0  # 2 + 3 encoder LSTMs, 4 decoder
    assert len(full["att"]) == 3 and 0.05 < full["att"][0] and full["att"][-1] <= 0.1
    mini = _config("mini")
    got = _init_ranges("mini")
    assert 0.9 * mini.model.init_weight < got["low"] <= got["top"] <= mini.model.init_weight
    assert mini.model.init_weight != 0.1
    assert got["g"] == pytest.approx(mini.model.attention_scale)
    assert got["b_hh"] == 0.0 and got["att"][-1] <= 0.1


def test_dropout_is_where_the_reference_decoder_puts_it():
    """decoder.py: `RecurrentAttention.forward` drops its input (the embedded target) before
    the first LSTM; `ResidualRecurrentDecoder.forward` concatenates the attention context to
    x and then drops the concatenation, before each of layers 2-4. So one decode drops
    [b, t, h] once, then [b, t, 2h] three times, and the context is dropped with x.
    Bites: no dropout on the decoder embedding; dropping x before the concatenation."""
    model = gnmt_model.GNMT(gnmt_model.GNMTConfig(vocab_size=20, hidden_size=6, num_layers=4,
                                                  dropout_rate=0.5, deterministic=False))
    src = jnp.array([[5, 6, 7, 1], [8, 1, 0, 0]], jnp.int32)
    tgt_in = jnp.array([[0, 3, 4], [0, 2, 2]], jnp.int32)
    rngs = {"params": jax.random.PRNGKey(0), "dropout": jax.random.PRNGKey(1)}
    params = model.init(rngs, src, tgt_in)["params"]
    enc = model.apply({"params": params}, src, method=gnmt_model.GNMT.encode,
                      rngs={"dropout": jax.random.PRNGKey(2)})
    keys = model.apply({"params": params}, enc, method=gnmt_model.GNMT.attention_keys)
    shapes = []

    def record(next_fun, args, kwargs, context):
        if isinstance(context.module, nn.Dropout):
            shapes.append(tuple(args[0].shape))
        return next_fun(*args, **kwargs)

    with nn.intercept_methods(record):
        model.apply({"params": params}, tgt_in, enc, keys, src != 0,
                    method=gnmt_model.GNMT.decode, rngs={"dropout": jax.random.PRNGKey(3)})
    assert shapes == [(2, 3, 6), (2, 3, 12), (2, 3, 12), (2, 3, 12)]


def test_decoding_step_by_step_equals_the_teacher_forced_pass():
    """Bites: not carrying decoder layer 2's state between steps."""
    model = _tiny()
    src = jnp.array([[5, 6, 7, 1], [8, 1, 0, 0]], jnp.int32)
    tgt_in = jnp.array([[0, 3, 4, 9], [0, 2, 2, 1]], jnp.int32)
    params = jax.jit(model.init)(jax.random.PRNGKey(0), src, tgt_in)["params"]
    v = {"params": params}
    full = jax.jit(model.apply)(v, src, tgt_in)
    enc = jax.jit(functools.partial(model.apply, method=gnmt_model.GNMT.encode))(v, src)
    keys = model.apply(v, enc, method=gnmt_model.GNMT.attention_keys)
    decode = jax.jit(functools.partial(model.apply, method=gnmt_model.GNMT.decode))
    zeros = jnp.zeros((2, 6))
    carry = [(zeros, zeros)] * 4
    for t in range(4):
        logits, _, carry = decode(v, tgt_in[:, t:t + 1], enc, keys, src != 0, carry)
        np.testing.assert_allclose(logits[:, 0], full[:, t], atol=1e-5)


# ---- loss and schedule -----------------------------------------------------------------------
def test_loss_is_label_smoothed_xent_summed_over_tokens_per_sentence():
    """trainer.py: the criterion's sum over non-pad tokens divided by the batch size.
    Bites: a per-token mean."""
    logits = jnp.asarray(np.random.default_rng(2).normal(size=(2, 3, 5)), jnp.float32)
    targets = jnp.array([[2, 3, 1], [4, 1, 0]], jnp.int32)
    logp = jax.nn.log_softmax(logits)
    one_hot = jax.nn.one_hot(targets, 5)
    want = -(0.9 * one_hot + 0.1 / 5) * logp
    xent = smoothed_xent(logits, targets, 0.1)
    np.testing.assert_allclose(xent, want.sum(-1), atol=1e-6)

    c = _config("smoke", **{"model.vocab_size": 5, "model.num_classes": 5,
                            "model.dropout_rate": 0.0, "model.num_layers": 2})
    w = GNMTWorkload(c)
    params = nn.meta.unbox(jax.jit(w.init)(jax.random.PRNGKey(0))[0])
    batch = {"inputs": jnp.array([[3, 1, 0], [4, 3, 1]], jnp.int32), "targets": targets}
    loss, (_, metrics) = jax.jit(w.loss)(params, {}, batch, jax.random.PRNGKey(0))
    logits = jax.jit(w.model().apply)({"params": params}, batch["inputs"],
                                      gnmt_model.shift_right(targets))
    per_token = smoothed_xent(logits, targets, 0.1) * (targets > 0)
    np.testing.assert_allclose(loss, per_token.sum() / 2, rtol=1e-5)
    np.testing.assert_allclose(metrics["loss_per_token"], per_token.sum() / 5, rtol=1e-5)


def test_schedule_is_the_reference_warmup_multistep():
    """lr_scheduler.py with train.py's defaults over 3,000 steps: remain = int(0.666 * 3000) =
    1998, interval = (3000 - 1998) // 4 = 250. Update k runs at the scheduler's last_epoch k
    (mlcommons/training v0.7 rnn_translator/pytorch: torch 1.0.1's `_LRScheduler.__init__`
    leaves last_epoch 0, and seq2seq/train/fp_optimizers.py lines 104-105 and 161-162 call
    `scheduler.step()` before `optimizer.step()`), so the first update is at
    1e-3 * 0.01 ** (199 / 200), not 0.01 x base.
    Bites: a linear warmup; counting updates from 0."""
    w = GNMTWorkload(_config("full", **{"data.source": "synthetic",
                                        "schedule.train_steps": 3000}))
    assert w.schedule_steps() == {"total": 3000, "warmup": 200, "remain": 1998, "interval": 250}
    lr = lambda k: float(w.learning_rate(k - 1))  # noqa: E731  (update k, optax count k - 1)
    assert lr(1) == pytest.approx(1e-3 * 0.01 ** (199 / 200))
    assert lr(1) > 1.02e-5
    assert lr(100) == pytest.approx(1e-3 * 0.01 ** 0.5)
    assert lr(200) == pytest.approx(1e-3) and lr(1997) == pytest.approx(1e-3)
    assert lr(1998) == pytest.approx(5e-4) and lr(2247) == pytest.approx(5e-4)
    assert lr(2248) == pytest.approx(2.5e-4)
    assert lr(2999) == pytest.approx(1e-3 / 16) and lr(10**6) == pytest.approx(1e-3 / 16)


# ---- beam search ---------------------------------------------------------------------------
def _markov_step(table, attn):
    """A decoder whose log-probs depend on the last word only; fixed attention per step."""

    def step(words, cache):
        return table[words], jnp.broadcast_to(attn, (words.shape[0], attn.shape[-1])), cache

    return step


def test_beam_search_finds_the_best_hypothesis_greedy_misses():
    """Words: 0 start, 1 EOS, 2 a, 3 b. After start a 0.6 / b 0.4; after a EOS 0.5; after b EOS
    0.9: "b EOS" (0.36) beats "a EOS" (0.30), the greedy choice. Both beams have ended after
    step 2, so the search stops at step 3 and normalizes; attention is uniform over 2 source
    positions, so after two steps it sums to 1 everywhere and the coverage penalty is 0: the
    score is log 0.36 / ((5 + 3) / 6) ** 0.6 (length 3: start, b, EOS).
    Bites: lengths that leave out the start token (they start at 0) change the score."""
    p = np.full((4, 4), 1e-9)
    p[0, 2], p[0, 3] = 0.6, 0.4
    p[2, 1], p[2, 2], p[2, 3] = 0.5, 0.25, 0.25
    p[3, 1], p[3, 2], p[3, 3] = 0.9, 0.05, 0.05
    p[1, 1] = 1.0
    table = jnp.log(jnp.asarray(p / p.sum(1, keepdims=True), jnp.float32))
    step = _markov_step(table, jnp.array([0.5, 0.5]))
    seqs, scores = decode.beam_search(step, (), 1, 2, 2, 6, 0, 1)
    assert seqs[0, :2].tolist() == [3, 1]
    assert float(scores[0]) == pytest.approx(np.log(0.36) / (8 / 6) ** 0.6, rel=1e-4)
    greedy, _ = decode.beam_search(step, (), 1, 1, 2, 6, 0, 1)
    assert greedy[0, 0] == 2


def _reference_beam_search(step, batch, beam, src, max_seq_len, alpha, const, beta, eos=1,
                           bos=0):
    """mlcommons/training v0.7 seq2seq/inference/beam_search.py, transcribed to numpy with its
    dynamic `active` set (finished examples are removed, not masked)."""
    n = batch * beam
    translation = np.zeros((n, max_seq_len), np.int64)
    translation[:, 0] = bos
    lengths = np.ones(n, np.int64)
    scores = np.zeros(n, np.float32)
    active = np.arange(n)
    words = np.full(n, bos)
    accu = np.zeros((n, src))
    for idx in range(1, max_seq_len):
        if not len(active):
            break
        eos_mask = (words == eos).reshape(-1, beam)
        terminating = eos_mask.min(axis=1)
        lengths[active[~eos_mask.reshape(-1)]] += 1
        logprobs, attn = step(words)
        attn = np.where(eos_mask.reshape(-1, 1), 0.0, attn)
        accu[active] += attn
        vocab = logprobs.shape[-1]
        logprobs = logprobs.reshape(-1, beam, vocab).copy()
        logprobs[eos_mask] = np.full(vocab, -np.inf)
        logprobs[eos_mask, eos] = 0.0
        new = scores[active].reshape(-1, beam)[:, :, None] + logprobs
        if idx == 1:
            new[:, 1:, :] = -np.inf
        new = new.reshape(-1, beam * vocab)
        index = np.argsort(-new, axis=1, kind="stable")[:, :beam]
        source = index // vocab
        scores[active] = np.take_along_axis(new, index, 1).reshape(-1)
        words = (index % vocab).reshape(-1)
        source = source + (np.arange(len(source)) * beam)[:, None]
        translation[active] = translation[active[source.reshape(-1)]]
        translation[active, idx] = words
        lengths[active] = lengths[active[source.reshape(-1)]]
        step.reorder(source.reshape(-1))
        if terminating.any():
            done = active.reshape(-1, beam)[terminating]
            norm = ((const + lengths[done]) / (const + 1.0)) ** alpha
            scores[done] /= norm
            with np.errstate(divide="ignore"):
                pen = np.log(np.clip(accu[done], 0, 1))
            pen[np.isneginf(pen)] = 0
            scores[done] += beta * pen.sum(-1)
            keep = np.repeat(~terminating, beam)
            words = words[keep]
            step.keep(keep)
            active = active[keep]
    best = scores.reshape(batch, beam).argmax(1)
    rows = best + np.arange(batch) * beam
    return translation[rows, 1:], scores[rows]


class _RandomRNN:
    """A tiny random recurrent decoder (state = a hash of the history) shared by both
    searches; its numpy form follows the reference's removal of finished examples."""

    def __init__(self, vocab, src, seed):
        rng = np.random.default_rng(seed)
        self.emb = rng.normal(size=(vocab, 8)).astype(np.float32)
        self.w = rng.normal(size=(8, 8)).astype(np.float32) * 0.9
        self.out = rng.normal(size=(8, vocab)).astype(np.float32) * 2.0
        self.att = rng.normal(size=(8, src)).astype(np.float32) * 2.0

    def jax_step(self, words, h):
        h = jnp.tanh(h @ self.w + jnp.asarray(self.emb)[words])
        return (jax.nn.log_softmax(h @ self.out), jax.nn.softmax(h @ self.att), h)

    def numpy(self, n):
        rnn = self

        class Step:
            h = np.zeros((n, 8), np.float32)

            def __call__(self, words):
                logp, attn, self.h = (np.asarray(a) for a in rnn.jax_step(words, self.h))
                return logp, attn

            def reorder(self, rows):
                self.h = self.h[rows]

            def keep(self, mask):
                self.h = self.h[mask]

        return Step()


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_beam_search_equals_the_reference_algorithm(seed):
    """Static-shape search == the reference's loop (transcribed) on random tiny decoders: same
    tokens and final scores for every example, including ones that stop at the length limit.
    Bites: reordering the coverage sums with the beams (the reference does not); dropping the
    finished beams' EOS-only continuation; normalizing examples that have not ended."""
    batch, beam, src, vocab, max_len = 6, 3, 16, 6, 9  # src > steps: coverage below 1
    rnn = _RandomRNN(vocab, src, seed)
    rnn.out[:, 1] += 2.0  # EOS likelier: some examples end (and are normalized) in time
    h0 = np.repeat(np.random.default_rng(seed).normal(size=(batch, 8)), beam, 0)
    h0 = h0.astype(np.float32)
    seqs, scores = decode.beam_search(rnn.jax_step, jnp.asarray(h0), batch, beam, src, max_len,
                                      0, 1, 0.6, 5.0, 0.1)
    step = rnn.numpy(batch * beam)
    step.h = h0
    want_seqs, want_scores = _reference_beam_search(step, batch, beam, src, max_len, 0.6, 5.0,
                                                    0.1)
    ended = (want_seqs == 1).any(1) & (want_seqs[:, -1] == 0)  # stopped before the limit
    assert 0 < ended.sum() < batch
    np.testing.assert_array_equal(np.asarray(seqs), want_seqs)
    np.testing.assert_allclose(np.asarray(scores), want_scores, rtol=1e-5)


# ---- harness, logs, bad input ---------------------------------------------------------------
def test_full_config_log_has_every_closed_gnmt_key_and_fails_only_the_quality_target(tmp_path):
    """The full config on synthetic data with a tiny model and one step; every logged value is
    the full config's except global_batch_size and the schedule (its length is the run's).
    Bites: dropping a key from mllog_hyperparameters (the checker fails on it)."""
    c = _config("full", **{"data.source": "synthetic", "model.vocab_size": 16,
                           "model.num_classes": 16, "model.hidden_size": 8,
                           "model.num_layers": 2, "eval.max_decode_len": 2,
                           "data.global_batch_size": 8,
                           "eval.batch_size": 8, "eval.samples": 8, "data.train_samples": 16,
                           "run.max_train_samples": 8, "eval.every_samples": 8,
                           "model.dtype": "float32"})
    summary = train.train_and_evaluate(c, tmp_path / "run")
    assert summary["steps"] == 1
    log = tmp_path / "run" / "mlperf_log.txt"
    logged = {}
    for line in log.read_text().splitlines():
        record = json.loads(line.split(":::MLLOG ", 1)[1])
        logged.setdefault(record["key"], []).append(record)
    assert all(len(logged[k]) == 1 for k in CLOSED_GNMT_KEYS)
    assert logged["max_sequence_length"][0]["value"] == 50
    assert logged["opt_base_learning_rate"][0]["value"] == 1e-3
    # 16 steps: remain int(0.666 * 16) = 10 caps the 200 warmup steps (lr_scheduler.py)
    assert logged["opt_learning_rate_warmup_steps"][0]["value"] == 10
    assert logged["submission_division"][0]["value"] == "closed"
    result = mllog.check_compliance(log)
    assert not result.valid and result.failed_checks() == QUALITY_FAILURE, result.output


def test_missing_multi30k_is_a_usage_error_naming_the_download_command(tmp_path):
    c = _config("mini", **{"data.dir": str(tmp_path)})
    with pytest.raises(UsageError, match="download_multi30k"):
        GNMTWorkload(c).check_data()


def test_unprepared_data_is_a_usage_error_naming_the_gnmt_prepare_command(shared_data_dir,
                                                                            tmp_path):
    """Bites: the shared prepare module naming `tpubench prepare transformer`."""
    c = _config("mini", **{"data.dir": str(shared_data_dir), "data.cache_dir": str(tmp_path)})
    with pytest.raises(UsageError, match="tpubench prepare gnmt --config=mini"):
        GNMTWorkload(c).check_data()


def test_gnmt_is_registered():
    assert registry.workload_class("gnmt") is GNMTWorkload


# ---- real data ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smoke_multi30k(shared_data_dir, tmp_path_factory):
    """The smoke config on Multi30k, its data prepared (`tpubench prepare gnmt`'s hook)."""
    c = _config("smoke", **{"data.source": "multi30k", "data.dir": str(shared_data_dir),
                            "data.cache_dir": str(tmp_path_factory.mktemp("gnmt_cache")),
                            "model.dropout_rate": 0.0, "eval.batch_size": 500})
    w = GNMTWorkload(c)
    w.prepare()
    w.check_data()
    return w


def test_train_batches_keep_short_pairs_and_depend_on_seed_and_step_only(smoke_multi30k):
    """Pairs longer than max_len with start and end tokens are discarded (an epoch is the kept
    pairs), and a batch is a function of (seed, step). Bites: keeping pairs of max_len ids
    (forgetting the reference's BOS in the count)."""
    w = smoke_multi30k
    assert w.seq_len == 15 and w.train_samples == w.manifest()["train_pairs_kept"]
    assert 0 < w.train_samples < 29000
    it = w.train_batches(0, 0, 1)
    first = [next(it) for _ in range(4)]
    for b in first:
        lengths = (b["targets"] > 0).sum(1)
        assert b["inputs"].shape == (4, 15) and lengths.max() <= 15
        last = b["targets"][np.arange(4), lengths - 1]
        assert (last == ids.EOS_ID).all()
    resumed = next(w.train_batches(3, 0, 1))
    np.testing.assert_array_equal(resumed["inputs"], first[3]["inputs"])
    sources, targets, _ = prepared.load_train(w.prepare_config())
    fits = sum(1 < len(s) <= 15 and 1 < len(t) <= 15 for s, t in zip(sources, targets, strict=True))
    assert w.train_samples == fits


def test_smoke_multi30k_trains_and_scores_every_test_sentence_in_order(smoke_multi30k):
    """One optimizer step lowers the loss on its batch; the eval decodes all 1,000 test2016
    sources once and BLEU is that of the translations in example order. Bites: scoring in
    batch order (eval_finalize without the argsort) changes the BLEU."""
    import optax

    from tpubench import evaluation
    from tpubench.tasks.translation import corpus_bleu

    w = smoke_multi30k
    params = nn.meta.unbox(w.init(jax.random.PRNGKey(0))[0])
    tx = w.optimizer()
    batch = next(w.train_batches(0, 0, 1))

    @jax.jit
    def step(params, opt_state):
        (loss, _), grads = jax.value_and_grad(w.loss, has_aux=True)(
            params, {}, batch, jax.random.PRNGKey(1))
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    p1, s1, loss0 = step(params, tx.init(params))
    for _ in range(5):
        p1, s1, loss1 = step(p1, s1)
    assert float(loss1) < float(loss0)
    eval_step = jax.jit(evaluation.eval_fn(w))
    outputs = jax.device_get([eval_step(p1, {}, eb) for eb in w.eval_batches(0, 1)])
    per = evaluation.accumulate(outputs).per_example
    assert sorted(per["example_id"].tolist()) == list(range(1000))
    order = np.argsort(per["example_id"])
    hyps = w.tokenizer().decode(per["decoded"][order])
    _, refs = w.eval_data()
    assert evaluation.quality(w, outputs) == corpus_bleu(hyps, refs)
