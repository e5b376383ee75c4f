"""Transformer (MLPerf `transformer`): size, packing, beam search, BLEU, data sources, logs."""

import json
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import evaluation, registry
from tpubench.datasets import download_multi30k
from tpubench.datasets import prepared_text as prepared
from tpubench.datasets import translation as ip
from tpubench.errors import UsageError
from tpubench.loops import steps
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
from tpubench.tasks.translation import corpus_bleu
from tpubench.text import subtokenizer as sub
from workloads.transformer import decode
from workloads.transformer import model as transformer_model
from workloads.transformer.input_pipeline import train_batches
from workloads.transformer.workload import TransformerWorkload, rsqrt_schedule

QUALITY_FAILURE = [
    "WARNING -  Failed checks for eval_accuracy : v['value'] >= 0.2500 and v['value'] < 1",
    "ERROR - FAILED",
]


def _config(name, **overrides):
    c = config_lib.load("transformer", name)
    config_lib.apply_overrides(c, overrides)
    return c


@pytest.fixture(scope="module")
def mini_workload(shared_data_dir, cache_dir):
    """The mini config with its Multi30k data prepared."""
    return _prepared("mini", **{"data.dir": str(shared_data_dir), "data.cache_dir": cache_dir})


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One prepared-data cache for the module (each distinct config prepares once)."""
    return str(tmp_path_factory.mktemp("transformer_cache"))


def _prepared(name, **overrides):
    """A workload of config `name` whose data is prepared (`tpubench prepare`'s hook)."""
    workload = TransformerWorkload(_config(name, **overrides))
    workload.prepare()
    return workload


def _one_train_and_eval_step(workload):
    """One jitted optimizer step on the first real batch, then the eval batches through the
    harness's eval path (masked eval_step, accumulate, eval_finalize); returns (loss before,
    loss after, bleu, batch, the real rows' per-example outputs, (trained params, first eval
    batch))."""
    params, model_state = workload.init(jax.random.PRNGKey(0))
    params = nn.meta.unbox(params)
    tx = workload.optimizer()
    opt_state = tx.init(params)
    batch = next(workload.train_batches(0, 0, 1))

    @jax.jit
    def step(params, opt_state):
        (loss, _), grads = jax.value_and_grad(workload.loss, has_aux=True)(
            params, model_state, batch, jax.random.PRNGKey(1))
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), loss

    new_params, loss0 = step(params, opt_state)
    _, loss1 = step(new_params, opt_state)
    eval_step = jax.jit(evaluation.eval_fn(workload))
    outputs = jax.device_get([eval_step(new_params, model_state, eb)
                              for eb in workload.eval_batches(0, 1)])
    results = evaluation.accumulate(outputs).per_example
    first = next(workload.eval_batches(0, 1))
    return (float(loss0), float(loss1), evaluation.quality(workload, outputs), batch, results,
            (new_params, first))


# ---- the full model ----------------------------------------------------------------------------
def test_full_config_is_transformer_big_with_exact_parameter_count():
    """Shared vocab V=33,708, d=1024, FF=4096, 6+6 layers, tied softmax, biased projections:
    embedding V*d = 34,516,992; encoder layer = attention 4*(d*d+d) 4,198,400 + FF
    (d*4096+4096 + 4096*d+d) 8,393,728 + 2 layer norms 4,096 = 12,596,224 (x6 = 75,577,344);
    decoder layer = 2 attentions 8,396,800 + FF 8,393,728 + 3 norms 6,144 = 16,796,672
    (x6 = 100,780,032); final encoder/decoder norms 4,096. Total 210,878,464 (~210.9M)."""
    workload = TransformerWorkload(_config("full"))
    count = steps.param_count(workload)
    assert count == 210_878_464
    assert abs(count - 210.9e6) / 210.9e6 < 0.01


def test_every_param_has_one_logical_name_per_dimension():
    boxed, _ = jax.eval_shape(TransformerWorkload(_config("smoke")).init, jax.random.PRNGKey(0))
    leaves = jax.tree.leaves(boxed, is_leaf=lambda x: isinstance(x, nn.Partitioned))
    assert leaves and all(isinstance(x, nn.Partitioned) for x in leaves)
    assert all(len(x.names) == len(x.value.shape) for x in leaves)
    names = {n for x in leaves for n in x.names}
    assert {"vocab", "embed", "heads", "kv", "mlp"} <= names


def test_rsqrt_schedule_warms_up_linearly_then_decays_as_inverse_sqrt():
    lr = rsqrt_schedule(2.0, 1024, 664)
    peak = 2.0 / 32 / np.sqrt(664)
    np.testing.assert_allclose(lr(663), peak, rtol=1e-5)
    np.testing.assert_allclose(lr(331), peak * 332 / 664, rtol=1e-5)
    np.testing.assert_allclose(lr(4 * 664 - 1), peak / 2, rtol=1e-5)


def test_loss_is_label_smoothed_cross_entropy_over_non_pad_tokens():
    """Loss and token accuracy over the non-pad targets only. Bites: counting padded positions
    in the accuracy (dividing by all tokens) fails the accuracy check."""
    workload = TransformerWorkload(_config("smoke", **{"model.dropout_rate": 0.0,
                                                       "model.attention_dropout_rate": 0.0}))
    params = nn.meta.unbox(workload.init(jax.random.PRNGKey(0))[0])
    batch = workload.synthetic_batch(jax.random.PRNGKey(1), 2)
    batch["targets"] = batch["targets"].at[:, 20:].set(0)  # padding does not count
    loss, (_, metrics) = workload.loss(params, {}, batch, jax.random.PRNGKey(2))
    logits = workload.model().apply({"params": params}, batch["inputs"], batch["targets"])
    soft = optax.smooth_labels(jax.nn.one_hot(batch["targets"], 256), 0.1)
    expected = optax.softmax_cross_entropy(logits, soft)[:, :20].mean()
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    hits = (jnp.argmax(logits, -1) == batch["targets"])[:, :20]
    np.testing.assert_allclose(metrics["accuracy"], hits.mean(), rtol=1e-6)


# ---- packing and batches -----------------------------------------------------------------------
def _toy_pairs(n=50, seed=0):
    rng = np.random.default_rng(seed)
    make = lambda k: np.append(rng.integers(3, 20, k), 1).astype(np.int32)  # noqa: E731
    sources = [make(rng.integers(1, 12)) for _ in range(n)]
    targets = [make(rng.integers(1, 12)) for _ in range(n)]
    return ip.Pairs(sources, targets, [""] * n)


def test_packing_fits_rows_and_keeps_every_pair_once_per_epoch():
    pairs = _toy_pairs()
    kept = ip.keep_indices(pairs, 16)
    rows = ip.pack_rows(pairs, np.random.default_rng(0).permutation(kept), 16)
    assert sorted(i for row in rows for i in row) == sorted(kept.tolist())
    packed = ip.build_packed(pairs, rows, 16)
    for r, row in enumerate(rows):
        for key, seqs in (("inputs", pairs.sources), ("targets", pairs.targets)):
            seg = packed[f"{key}_segmentation"][r]
            assert seg.max() == len(row)
            for s, i in enumerate(row, start=1):
                np.testing.assert_array_equal(packed[key][r][seg == s], seqs[i])
                np.testing.assert_array_equal(
                    packed[f"{key}_position"][r][seg == s], np.arange(len(seqs[i])))


def test_packing_off_puts_one_pair_per_row_and_names_another_prepared_directory(tmp_path):
    """`data.packing=False` (benchmarks/packing.py's baseline): one pair per row, in the given
    order; the prepared data of that config lives apart from the packed one's, while the packed
    configs keep their directory names. Bites: the option not reaching pack_rows (rows of 2-4
    pairs), or missing from the digest (both configs would share one prepared directory)."""
    pairs = _toy_pairs()
    kept = ip.keep_indices(pairs, 16)
    rows = ip.pack_rows(pairs, kept, 16, packing=False)
    assert rows == [[i] for i in kept.tolist()]
    assert len(ip.pack_rows(pairs, kept, 16)) < len(rows)
    packed = _config("mini", **{"data.cache_dir": str(tmp_path)})
    unpacked = _config("mini", **{"data.cache_dir": str(tmp_path), "data.packing": False})
    assert prepared.directory(packed) != prepared.directory(unpacked)
    assert "packing" not in prepared._data_keys(packed)


def test_long_pairs_are_discarded():
    pairs = _toy_pairs()
    kept = ip.keep_indices(pairs, 8)
    assert all(len(pairs.sources[i]) <= 8 and len(pairs.targets[i]) <= 8 for i in kept)
    assert len(kept) < 50


def test_train_batches_are_a_function_of_seed_and_step():
    """Bites: seeding the epoch order by epoch only (not seed) fails the seed check; resuming
    at step 7 from epoch 0 fails the resume check."""
    pairs = _toy_pairs()
    kept = ip.keep_indices(pairs, 16)
    rows = [np.asarray(r) for r in ip.pack_rows(pairs, kept, 16)]
    c = _config("smoke", **{"data.max_len": 16, "data.global_batch_size": 4})
    stream = train_batches(pairs, rows, c, 0, 0, 1)
    first = [next(stream) for _ in range(12)]  # crosses an epoch boundary
    assert len(rows) // 4 < 12
    resumed = train_batches(pairs, rows, c, 7, 0, 1)
    for expected in first[7:]:
        got = next(resumed)
        for k in expected:
            np.testing.assert_array_equal(got[k], expected[k])
    halves = [next(train_batches(pairs, rows, c, 3, p, 2))["inputs"] for p in (0, 1)]
    np.testing.assert_array_equal(np.concatenate(halves), first[3]["inputs"])
    other_seed = next(train_batches(pairs, rows, _config("smoke", **{"data.max_len": 16,
                                                                     "data.global_batch_size": 4,
                                                                     "run.seed": 1}), 0, 0, 1))
    assert not np.array_equal(first[0]["inputs"], other_seed["inputs"])
    # An epoch is every prepared row once (the last partial batch dropped).
    n = len(rows) // 4
    seen = sorted(tuple(r) for b in first[:n] for r in b["inputs"].tolist())
    expected_rows = ip.build_packed(pairs, [r.tolist() for r in rows], 16)["inputs"].tolist()
    assert set(seen) <= {tuple(r) for r in expected_rows} and len(set(seen)) == 4 * n


def test_eval_batches_never_truncate_and_refuse_a_short_width():
    """Bites: truncating long sources (the old behaviour) fails the equality."""
    sources = [np.arange(3, 3 + k, dtype=np.int32) for k in (5, 40, 2)]
    batches = list(ip.eval_batches(sources, 2, 40, 0, 1))
    rows = np.concatenate([b["inputs"] for b in batches])
    for i, src in enumerate(sources):
        np.testing.assert_array_equal(rows[i, : len(src)], src)
    with pytest.raises(UsageError, match="never truncated"):
        list(ip.eval_batches(sources, 2, 39, 0, 1))


# ---- beam search -------------------------------------------------------------------------------
def _toy_decoder(ids, cache):
    """Vocab {0 start, 1 EOS, 2 A, 3 B}. After start: A 0.6, B 0.4. After A: EOS 0.3 and the
    rest spread; after B: EOS 0.99. Greedy says A EOS (0.18); the best is B EOS (0.396)."""
    table = jnp.log(jnp.array([
        [1e-9, 1e-9, 0.6, 0.4],
        [0.25, 0.25, 0.25, 0.25],
        [0.2, 0.3, 0.25, 0.25],
        [0.0033, 0.99, 0.0033, 0.0034],
    ]))
    return table[ids[:, 0]], cache


def test_cached_decode_steps_match_teacher_forced_logits():
    workload = TransformerWorkload(_config("smoke"))
    params = nn.meta.unbox(workload.init(jax.random.PRNGKey(0))[0])
    model, mc = workload.model(), workload.model_config
    v = {"params": params}
    inputs = jnp.array([[5, 6, 7, 1, 0, 0], [9, 1, 0, 0, 0, 0]])
    targets = jnp.array([[11, 12, 13, 14, 1], [20, 21, 1, 0, 0]])
    encoded = model.apply(v, inputs, method=model.encode)
    forced = model.apply(v, encoded, inputs, targets, method=model.decode)
    cross_kv = model.apply(v, encoded, method=model.cross_kv)
    cache = transformer_model.init_cache(mc, 2, 5)
    ids = jnp.zeros((2, 1), jnp.int32)  # the start token
    for t in range(5):
        logits, cache = model.apply(v, ids, t, inputs, cross_kv, cache, method=model.decode_step)
        np.testing.assert_allclose(logits[0], forced[0, t], atol=1e-4)
        if t < 3:
            np.testing.assert_allclose(logits[1], forced[1, t], atol=1e-4)
        ids = targets[:, t : t + 1]


@pytest.mark.parametrize("beam,expected", [(1, [2, 1]), (2, [3, 1])])
def test_beam_search_finds_the_sequence_greedy_misses(beam, expected):
    cache = {"dummy": jnp.zeros((3 * beam, 1)), "index": jnp.zeros([], jnp.int32)}
    seqs, scores = jax.jit(lambda c: decode.beam_search(
        _toy_decoder, c, batch_size=3, beam_size=beam, max_decode_len=4, eos_id=1, alpha=0.6
    ))(cache)
    np.testing.assert_array_equal(np.asarray(seqs)[:, :2], [expected] * 3)
    p = 0.6 * 0.3 if beam == 1 else 0.4 * 0.99
    np.testing.assert_allclose(scores, np.log(p) / decode.length_penalty(2, 0.6), rtol=1e-4)


def _random_prefix_model(vocab, max_len, seed=0):
    """A decoder whose next-token distribution is a random function of the whole prefix: the
    cache carries a code of the prefix, logits = table[code]."""
    table = jax.random.normal(jax.random.PRNGKey(seed), ((vocab + 1) ** (max_len + 2), vocab)) * 2

    def tokens_to_logits(ids, cache):
        code = cache["code"] * (vocab + 1) + ids[:, 0] + 1
        return table[code], {"code": code, "index": cache["index"] + 1}

    return np.asarray(jax.nn.log_softmax(table)), tokens_to_logits


def _brute_force(logprobs, vocab, max_len, eos, alpha, batch_offset):
    """Best EOS-terminated sequence over every sequence of length <= max_len (exhaustive)."""
    import itertools

    best = (-np.inf, None)
    for k in range(1, max_len + 1):
        for body in itertools.product([t for t in range(vocab) if t != eos], repeat=k - 1):
            seq, code, total = list(body) + [eos], batch_offset, 0.0
            code = code * (vocab + 1) + 0 + 1  # the start token
            for t in seq:
                total += logprobs[code, t]
                code = code * (vocab + 1) + t + 1
            score = total / float(decode.length_penalty(k, alpha))
            if score > best[0]:
                best = (score, seq)
    return best


def test_beam_search_equals_brute_force_search_on_a_random_model():
    """With a beam wide enough to keep every live prefix, beam search must return the
    exhaustive optimum of log P / length penalty; a narrow beam may not, but never scores
    above it. Bites: dividing by length_penalty(index) instead of (index + 1) for finished
    hypotheses, or keeping beam + 1 instead of 2 * beam candidates, changes the results."""
    vocab, max_len, eos, alpha = 4, 4, 1, 0.6
    logprobs, fn = _random_prefix_model(vocab, max_len)
    batch, beam = 3, (vocab - 1) ** (max_len - 1)
    # Example b starts from prefix code b (so the three examples see different models).
    for width in (beam, 2):
        cache = {"code": jnp.repeat(jnp.arange(batch), width), "index": jnp.zeros([], jnp.int32)}
        seqs, scores = jax.jit(lambda c, w=width: decode.beam_search(
            fn, c, batch_size=batch, beam_size=w, max_decode_len=max_len, eos_id=eos,
            alpha=alpha))(cache)
        for b in range(batch):
            score, seq = _brute_force(logprobs, vocab, max_len, eos, alpha, b)
            if width == beam:
                assert np.asarray(seqs)[b, : len(seq)].tolist() == seq
                np.testing.assert_allclose(scores[b], score, rtol=1e-5)
            else:
                assert float(scores[b]) <= score + 1e-5


# ---- BLEU -------------------------------------------------------------------------------------
def _reference_bleu(refs, hyps):
    """MLPerf v0.7 compute_bleu.py, written out from its description: lowercase, split around
    Unicode punctuation (not between digits) and symbols, corpus BLEU-4 with brevity penalty and
    1 / (2^k * candidates) for an order without matches. Returns BLEU as a fraction."""
    import collections
    import math
    import sys
    import unicodedata

    def chars(prefix):
        return "".join(chr(x) for x in range(sys.maxunicode)
                       if unicodedata.category(chr(x)).startswith(prefix))

    import re

    punct, symbols = chars("P"), chars("S")
    nondigit_punct = re.compile(r"([^\d])([" + re.escape(punct) + r"])")
    punct_nondigit = re.compile(r"([" + re.escape(punct) + r"])([^\d])")
    symbol = re.compile("([" + re.escape(symbols) + "])")

    def tokenize(text):
        text = nondigit_punct.sub(r"\1 \2 ", text.lower())
        text = punct_nondigit.sub(r" \1 \2", text)
        return symbol.sub(r" \1 ", text).split()

    matches, possible, ref_len, hyp_len = [0] * 4, [0] * 4, 0, 0
    for ref, hyp in zip(refs, hyps, strict=True):
        r, h = tokenize(ref), tokenize(hyp)
        ref_len, hyp_len = ref_len + len(r), hyp_len + len(h)
        for n in range(1, 5):
            rc = collections.Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            hc = collections.Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            matches[n - 1] += sum(min(c, hc[g]) for g, c in rc.items())
            possible[n - 1] += sum(hc.values())
    precisions, smooth = [], 1.0
    for m, p in zip(matches, possible, strict=True):
        if m:
            precisions.append(m / p)
        else:
            smooth *= 2
            precisions.append(1.0 / (smooth * p))
    geo = math.exp(sum(math.log(p) for p in precisions) / 4)
    ratio = hyp_len / ref_len
    return geo * (1.0 if ratio >= 1 else math.exp(1 - 1 / ratio))


BLEU_REFS = ["„Das ist gut“, sagte er.", "Der Preis: 1.000,50 $ (inkl. 19% MwSt.)!",
             "Sie kamen am 3. Mai 2014 an.", "Ein Hund läuft über die Wiese."]
BLEU_HYPS = ["„das ist gut“ sagte er.", "Der Preis: 1.000,50 $ inkl. MwSt!",
             "Sie kamen im Mai 2014.", "Ein Hund rennt auf der Wiese."]


def test_bleu_is_the_reference_compute_bleu():
    """The workload's BLEU (sacreBLEU, tokenize="intl", uncased) equals the reference's
    compute_bleu.py on German text with quotes, numbers and symbols, and differs from 13a
    there. Bites: tokenize="13a" (the old setting) or lowercase=False."""
    expected = _reference_bleu(BLEU_REFS, BLEU_HYPS)
    np.testing.assert_allclose(corpus_bleu(BLEU_HYPS, BLEU_REFS), expected, rtol=1e-6)
    assert abs(corpus_bleu(BLEU_HYPS, BLEU_REFS, "13a") - expected) > 0.01
    assert _config("full").eval.bleu_tokenize == _config("mini").eval.bleu_tokenize == "intl"


def test_eval_finalize_scores_translations_in_example_order(mini_workload):
    """Perfect translations score 1 in any batch order with padding rows; translations shifted
    by one example score near 0. Bites: ignoring example_id (scoring in batch order)."""
    workload = mini_workload
    _, refs = workload.eval_data()
    targets = workload.tokenizer().encode([r.lower() for r in refs])
    n, width = len(targets), max(len(t) for t in targets)
    decoded = np.zeros((n + 3, width), np.int32)
    for i, t in enumerate(targets):
        decoded[i, : len(t)] = t
    perm = np.random.default_rng(0).permutation(n + 3)  # 3 padding rows, shuffled in

    def outputs(rows):
        return [evaluation.BatchEval(
            sums={}, examples=(perm < n).sum(), mask=(perm < n).astype(np.float32),
            per_example={"decoded": rows, "example_id": np.minimum(perm, n - 1)})]

    assert evaluation.quality(workload, outputs(decoded[perm])) > 0.99
    misaligned = np.roll(decoded[perm], 1, axis=0)
    assert evaluation.quality(workload, outputs(misaligned)) < 0.1


# ---- the reference's subword vocabulary ----------------------------------------------------------
MADE_VOCAB = ["<pad>_", "<EOS>_", "the_", "cat", "s_", "._", "\\", "_", ";", "u",
              "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "c", "e", "h", "s", "t", "."]


def test_reference_vocab_file_gives_the_reference_ids(tmp_path):
    """A vocab file in the reference's format: ids are line numbers, tokens split at
    alphanumeric boundaries with single spaces dropped, each token ends in "_", longest match
    first, unknown characters escaped as \\NNN;. Expected ids worked out by hand.
    Bites: shortest-match-first, or keeping the single-space tokens, or 1-based ids."""
    path = tmp_path / "vocab.made"
    path.write_text("".join(f"'{s}'\n" for s in MADE_VOCAB), encoding="utf-8")
    tok = sub.Subtokenizer(path)
    ids = {s: i for i, s in enumerate(MADE_VOCAB)}
    # "the cats." -> the_ | cat s_ | ._
    assert tok.encode_one("the cats.") == [ids["the_"], ids["cat"], ids["s_"], ids["._"]]
    # "hä" -> h, \228; (ä is not in the alphabet), _
    want = [ids["h"], ids["\\"], ids["2"], ids["2"], ids["8"], ids[";"], ids["_"]]
    assert tok.encode_one("hä") == want
    assert tok.decode_one(tok.encode_one("the cats. hä")) == "the cats. hä"
    rows = np.zeros((1, 9), np.int32)
    rows[0, :5] = tok.encode(["the cats."])[0]
    assert tok.decode(rows) == ["the cats."]


def test_reference_vocab_build_and_sampling():
    """build(): reserved ids 0/1, every character of the corpus, a frequent word as one
    subtoken, counts below min_count left out, every line round-trips. sample_lines keeps one
    line, skips size // (2 * limit), until the budget is spent.
    Bites: dropping the alphabet from the candidates, or min_count compared with > instead of
    >=, fails."""
    lines = ["the cat sat on the mat.", "the dog ate the hat!", "a cat, the cat."] * 3
    counts = sub.count_tokens(lines)
    assert counts["the"] == 15 and counts[" "] == 0 and counts[", "] == 3
    vocab = sub.build(counts, min_count=6)
    assert vocab[:2] == ["<pad>_", "<EOS>_"]
    assert set("".join(lines)) <= set(vocab)
    assert "the_" in vocab and "cat_" in vocab and "dog_" not in vocab
    built = sub.build(counts, min_count=3)
    assert "dog_" in built  # 3 occurrences reach min_count=3
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        sub.save(vocab, f"{d}/v")
        tok = sub.Subtokenizer(f"{d}/v")
        assert tok.vocab_size == len(vocab)
        for line in lines:
            assert tok.decode_one(tok.encode_one(line)) == line
        assert tok.encode_one("the")[0] == vocab.index("the_")
    sample = list(sub.sample_lines([f"line{i}" for i in range(20)], file_chars=40, byte_limit=10))
    # skip 2 lines, keep 1; the budget (10) runs out only after it goes negative
    assert sample == ["line2", "line5", "line8"]


# ---- smoke on every data source ---------------------------------------------------------------
def test_smoke_synthetic_runs_through_the_harness(tmp_path):
    summary = train.train_and_evaluate(_config("smoke"), tmp_path / "run")
    assert summary["status"] == "aborted" and summary["steps"] == 1
    result = mllog.check_compliance(tmp_path / "run" / "mlperf_log.txt")
    assert not result.valid and result.failed_checks() == QUALITY_FAILURE


def test_smoke_multi30k_train_and_eval_step(shared_data_dir, cache_dir):
    """One step on prepared Multi30k, then the whole test split through eval_step: every
    example decoded once, BLEU is that of the gathered translations in example order, and a
    source decodes the same wherever it sits in a batch. Bites: letting padding rows or
    neighbours leak into beam search (e.g. dropping the encoder's source mask) fails the last
    check; scoring in batch order fails the BLEU check."""
    workload = _prepared("smoke", **{"data.source": "multi30k", "data.dir": str(shared_data_dir),
                                     "data.cache_dir": cache_dir, "data.eval_split": "test",
                                     "eval.batch_size": 500, "optimizer.learning_rate": 20.0,
                                     "data.max_len": 160})
    loss0, loss1, bleu, batch, results, (params, first) = _one_train_and_eval_step(workload)
    assert batch["inputs"].shape == (4, 160) and batch["targets_segmentation"].max() >= 2
    assert np.isfinite(loss0) and loss1 < loss0
    assert sorted(results["example_id"].tolist()) == list(range(1000))
    _, refs = workload.eval_data()
    order = np.argsort(results["example_id"])
    hyps = workload.tokenizer().decode(results["decoded"][order])
    assert bleu == corpus_bleu(hyps, refs)
    flipped = {k: v[::-1].copy() for k, v in first.items()}
    again = jax.jit(workload.eval_step)(params, {}, flipped)
    real = int(first["mask"].sum())  # the first batch is whole: its rows lead `results`
    assert real == len(first["mask"])
    np.testing.assert_array_equal(np.asarray(again.per_example["decoded"])[::-1],
                                  results["decoded"][:real])


def test_full_pipeline_prepares_and_trains_on_tfds_mock_data(cache_dir):
    """The full config's data path (three WMT corpora, the reference's vocabulary built from
    samples of the six corpus files, newstest2014) under tfds mock data, with a tiny model:
    the manifest counts what was read, the vocabulary is the reference format, the run is open
    division (built vocabulary), and one step trains. Bites: reading one corpus only, or
    treating the built vocabulary as closed, fails."""
    import tensorflow_datasets as tfds

    c = _config("full", **{"data.source": "tfds", "data.cache_dir": cache_dir,
                           "model.emb_dim": 16, "model.num_heads": 2, "model.num_layers": 1,
                           "model.mlp_dim": 32, "model.dtype": "float32", "data.max_len": 48,
                           "data.global_batch_size": 4, "eval.batch_size": 20,
                           "optimizer.learning_rate": 20.0, "eval.max_decode_len": 8,
                           "eval.beam_size": 2})
    with tfds.testing.mock_data(num_examples=40):
        workload = TransformerWorkload(c)
        workload.prepare()
        manifest = workload.manifest()
        loss0, loss1, bleu, batch, results, _ = _one_train_and_eval_step(workload)
    assert manifest["train_corpus_pairs"] == [40, 40, 40]
    assert manifest["eval_examples"] == 40 and manifest["vocab_origin"] == "built"
    vocab = sub.read_vocab(prepared.directory(c) / "vocab")
    assert vocab[:2] == ["<pad>_", "<EOS>_"] and manifest["vocab_size"] == len(vocab)
    assert workload.train_samples == manifest["train_rows"] > 0
    assert c.submission.division == "open"
    assert "vocab.ende.32768" in c.submission.open_division_reason
    assert workload.eval_input_len == manifest["max_eval_source_len"]
    assert batch["inputs"].shape == (4, 48)
    assert np.isfinite(loss0) and loss1 < loss0
    assert sorted(results["example_id"].tolist()) == list(range(40))


def test_full_config_with_the_reference_vocab_file_stays_closed(tmp_path):
    """Bites: forcing open division whatever the vocabulary fails."""
    path = tmp_path / "vocab.ende.32768"
    path.write_text("".join(f"'{s}'\n" for s in MADE_VOCAB), encoding="utf-8")
    c = _config("full", **{"data.source": "tfds", "data.vocab_file": str(path)})
    TransformerWorkload(c)
    assert c.submission.division == "closed" and c.is_mlperf
    c = _config("full", **{"data.source": "tfds"})
    TransformerWorkload(c)
    assert c.submission.division == "open" and not c.is_mlperf


# ---- data preparation -------------------------------------------------------------------------
def test_missing_multi30k_is_a_usage_error_naming_the_download_command(tmp_path):
    c = _config("mini", **{"data.dir": str(tmp_path)})
    with pytest.raises(UsageError, match="download_multi30k --data_dir="):
        TransformerWorkload(c).check_data()


def test_download_verifies_checksums_offline(shared_data_dir, tmp_path):
    source = shared_data_dir / "multi30k"
    out = download_multi30k.download(tmp_path / "data", base_url=source.as_uri() + "/")
    assert sorted(os.listdir(out)) == sorted(download_multi30k.SHA256)
    assert download_multi30k.verify_dir(out) == list(download_multi30k.SHA256)

    bad = tmp_path / "bad"
    shutil.copytree(source, bad)
    os.chmod(bad / "val.en.gz", 0o644)
    with open(bad / "val.en.gz", "ab") as f:
        f.write(b"x")
    os.remove(out / "val.en.gz")
    with pytest.raises(download_multi30k.ChecksumError, match="val.en.gz"):
        download_multi30k.download(tmp_path / "data", base_url=bad.as_uri() + "/")
    assert not (out / "val.en.gz").exists()


# ---- logs -------------------------------------------------------------------------------------
def test_full_config_log_fails_only_the_quality_target(tmp_path):
    """The full config on synthetic data with a tiny model and one step. Every logged value is
    the full config's except global_batch_size (2048 rows of 256 tokens need ~6 GB here)."""
    c = _config("full", **{"data.source": "synthetic", "model.vocab_size": 16,
                           "model.num_classes": 16, "model.emb_dim": 8, "model.num_heads": 1,
                           "model.num_layers": 1, "model.mlp_dim": 8, "eval.max_decode_len": 2,
                           "data.global_batch_size": 8, "eval.batch_size": 1001,
                           "eval.samples": 1001,
                           "run.max_train_samples": 8, "eval.every_samples": 8})
    train.train_and_evaluate(c, tmp_path / "run")
    log = tmp_path / "run" / "mlperf_log.txt"
    logged = {}
    for line in log.read_text().splitlines():
        record = json.loads(line.split(":::MLLOG ", 1)[1])
        logged[record["key"]] = record
    full = TransformerWorkload(_config("full")).mllog_hyperparameters()
    for key, value in full.items():
        if key != "global_batch_size":
            expected = value[0] if isinstance(value, tuple) else value
            assert logged[key]["value"] == expected, key
    assert logged["max_sequence_length"]["metadata"]["method"] == "discard"
    assert logged["submission_division"]["value"] == "closed"
    result = mllog.check_compliance(log)
    assert not result.valid and result.failed_checks() == QUALITY_FAILURE, result.output


def test_transformer_is_registered():
    assert "transformer" in registry.names()
    assert registry.workload_class("transformer") is TransformerWorkload


# Eval point (step) at which the mini first reaches its target, per seed: measured with
# runs of this config on CPU (deterministic there); see configs/mini.py.
MINI_TARGET_STEP = {0: 270, 1: 270}


@pytest.mark.slow
# Both seeds run with --extended: seed 0 alone took 536 s of a 2-worker default run (the
# slowest test; suite budget ~25 min on 2 cores). In the default run, translation's
# convergence is proven by the GNMT mini's run to target (tests/test_gnmt_mini.py, same
# Multi30k data, eval and BLEU), and this model by the smoke tests above.
@pytest.mark.extended
@pytest.mark.parametrize("seed", [0, 1])
def test_mini_reaches_its_bleu_target_at_the_measured_step(seed, shared_data_dir, tmp_path):
    """The mini time-to-quality run, bounded in steps (no wall-clock budget): each seed reaches
    the target at its measured eval point, within one eval point (90 steps), and the log passes
    the official checker. Not yet bitten on purpose (two runs take ~20 min on the shared CPU);
    the steps come from runs of this exact config with target 0.99 (configs/mini.py)."""
    c = _config("mini", **{"run.seed": seed, "data.dir": str(shared_data_dir),
                           "data.cache_dir": str(tmp_path / "c")})
    assert c.run.max_time_s == 0.0
    TransformerWorkload(c).prepare()
    summary = train.train_and_evaluate(c, tmp_path / "run")
    assert summary["status"] == "success", summary["quality_history"]
    every = c.eval.every_samples // c.data.global_batch_size
    assert abs(summary["steps"] - MINI_TARGET_STEP[seed]) <= every, summary["quality_history"]
    assert summary["final_quality"] >= c.eval.target_value
    result = mllog.check_compliance(tmp_path / "run" / "mlperf_log.txt")
    assert result.valid, result.output


def test_an_eval_of_nothing_is_a_usage_error_before_any_compute(tmp_path):
    """The full config counts its eval sentences when its data is prepared; on synthetic data
    nothing counts them, and an eval over zero examples would measure nothing.
    Bites: dropping the check in `train_and_evaluate` (the run compiles, trains, then fails in
    the eval with a ValueError)."""
    c = _config("full", **{"data.source": "synthetic"})
    with pytest.raises(UsageError, match="eval.samples is 0"):
        train.train_and_evaluate(c, tmp_path / "run")
    assert not (tmp_path / "run" / "mlperf_log.txt").exists()
