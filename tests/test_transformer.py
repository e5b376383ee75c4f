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
from tpubench import mllog, registry, steps, train
from tpubench.errors import UsageError
from workloads.transformer import decode, download_multi30k
from workloads.transformer import input_pipeline as ip
from workloads.transformer import model as transformer_model
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
def cache_dir(tmp_path_factory):
    """One tokenizer cache for the module (each distinct corpus trains its model once)."""
    return str(tmp_path_factory.mktemp("transformer_cache"))


def _one_train_and_eval_step(workload):
    """One jitted optimizer step on the first real batch, then one eval batch through
    eval_step and eval_finalize; returns (loss before, loss after, bleu, batch)."""
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
    eval_step = jax.jit(workload.eval_step)
    results = {"decoded": [], "example_id": [], "mask": []}
    for eb in workload.eval_batches(0, 1):
        out = eval_step(new_params, model_state, eb)
        results["decoded"].append(np.asarray(out["decoded"]))
        results["example_id"].append(np.asarray(out["example_id"]))
        results["mask"].append(eb["mask"])
    results = {k: np.concatenate(v) for k, v in results.items()}
    return float(loss0), float(loss1), workload.eval_finalize(results), batch


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
    workload = TransformerWorkload(_config("smoke", dropout_rate=0.0, attention_dropout_rate=0.0))
    params = nn.meta.unbox(workload.init(jax.random.PRNGKey(0))[0])
    batch = workload.synthetic_batch(jax.random.PRNGKey(1), 2)
    batch["targets"] = batch["targets"].at[:, 20:].set(0)  # padding does not count
    loss, (_, metrics) = workload.loss(params, {}, batch, jax.random.PRNGKey(2))
    logits = workload.model().apply({"params": params}, batch["inputs"], batch["targets"])
    soft = optax.smooth_labels(jax.nn.one_hot(batch["targets"], 256), 0.1)
    expected = optax.softmax_cross_entropy(logits, soft)[:, :20].mean()
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    assert 0.0 <= metrics["accuracy"] <= 1.0


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
    rows = ip.epoch_rows(pairs, kept, seed=0, epoch=0, max_len=16)
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


def test_long_pairs_are_discarded():
    pairs = _toy_pairs()
    kept = ip.keep_indices(pairs, 8)
    assert all(len(pairs.sources[i]) <= 8 and len(pairs.targets[i]) <= 8 for i in kept)
    assert len(kept) < 50


def test_train_batches_are_a_function_of_seed_and_step():
    pairs = _toy_pairs()
    c = _config("smoke", max_len=16, global_batch_size=4)
    stream = ip.train_batches(pairs, c, 0, 0, 1)
    first = [next(stream) for _ in range(12)]  # crosses an epoch boundary
    resumed = ip.train_batches(pairs, c, 7, 0, 1)
    for expected in first[7:]:
        got = next(resumed)
        for k in expected:
            np.testing.assert_array_equal(got[k], expected[k])
    halves = [next(ip.train_batches(pairs, c, 3, p, 2))["inputs"] for p in (0, 1)]
    np.testing.assert_array_equal(np.concatenate(halves), first[3]["inputs"])
    assert not np.array_equal(first[0]["inputs"], first[1]["inputs"])


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


# ---- BLEU -------------------------------------------------------------------------------------
def test_bleu_of_the_references_own_tokens_is_one_in_any_batch_order(shared_data_dir, cache_dir):
    c = _config("mini", data_dir=str(shared_data_dir), cache_dir=cache_dir)
    workload = TransformerWorkload(c)
    pairs = workload.eval_pairs()
    n, width = len(pairs.targets), max(len(t) for t in pairs.targets)
    decoded = np.zeros((n + 3, width), np.int32)
    for i, t in enumerate(pairs.targets):
        decoded[i, : len(t)] = t
    perm = np.random.default_rng(0).permutation(n + 3)  # 3 padding rows, shuffled in
    results = {"decoded": decoded[perm], "example_id": np.minimum(perm, n - 1),
               "mask": (perm < n).astype(np.float32)}
    assert workload.eval_finalize(results) > 0.99
    results["decoded"] = np.roll(results["decoded"], 1, axis=0)  # misaligned translations
    assert workload.eval_finalize(results) < 0.1


def test_mini_train_samples_is_the_packed_rows_of_an_epoch(shared_data_dir, cache_dir):
    c = _config("mini", data_dir=str(shared_data_dir), cache_dir=cache_dir)
    workload = TransformerWorkload(c)
    pairs = ip.tokenize_pairs(workload.tokenizer(), workload._train_text(), c.lowercase)
    kept = ip.keep_indices(pairs, c.max_len)
    assert len(kept) == 29000  # Multi30k captions all fit 64 subwords: nothing discarded
    rows = ip.epoch_rows(pairs, kept, c.seed, 0, c.max_len)
    assert abs(len(rows) - c.train_samples) / c.train_samples < 0.01


# ---- smoke on every data source ---------------------------------------------------------------
def test_smoke_synthetic_runs_through_the_harness(tmp_path):
    summary = train.train_and_evaluate(_config("smoke"), tmp_path / "run")
    assert summary["status"] == "aborted" and summary["steps"] == 1
    result = mllog.check_compliance(tmp_path / "run" / "mlperf_log.txt")
    assert not result.valid and result.failed_checks() == QUALITY_FAILURE


def test_smoke_multi30k_train_and_eval_step(shared_data_dir, cache_dir):
    c = _config("smoke", data_source="multi30k", data_dir=str(shared_data_dir),
                cache_dir=cache_dir, eval_split="test", eval_samples=1000, eval_batch_size=500,
                learning_rate=20.0, max_len=96)
    loss0, loss1, bleu, batch = _one_train_and_eval_step(TransformerWorkload(c))
    assert batch["inputs"].shape == (4, 96) and batch["targets_segmentation"].max() >= 2
    assert np.isfinite(loss0) and loss1 < loss0
    assert 0.0 <= bleu < 0.05  # one step of a 16-wide model translates nothing


def test_smoke_tfds_mock_data_train_and_eval_step(cache_dir):
    import tensorflow_datasets as tfds

    c = _config("smoke", data_source="tfds", cache_dir=cache_dir, tokenizer_max_chars=2000,
                eval_samples=40, eval_batch_size=20, learning_rate=20.0)
    with tfds.testing.mock_data(num_examples=40):
        workload = TransformerWorkload(c)
        loss0, loss1, bleu, batch = _one_train_and_eval_step(workload)
        assert len(workload.eval_pairs().references) == 40
    assert batch["inputs"].shape == (4, 32)
    assert np.isfinite(loss0) and loss1 < loss0
    assert 0.0 <= bleu <= 1.0


# ---- data preparation -------------------------------------------------------------------------
def test_missing_multi30k_is_a_usage_error_naming_the_download_command(tmp_path):
    c = _config("mini", data_dir=str(tmp_path))
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
    c = _config("full", data_source="synthetic", vocab_size=16, num_classes=16, emb_dim=8,
                num_heads=1, num_layers=1, mlp_dim=8, max_decode_len=2, global_batch_size=8,
                eval_batch_size=1001, max_train_samples=8, eval_every_samples=8)
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


@pytest.mark.slow
def test_mini_reaches_its_bleu_target_on_multi30k(shared_data_dir, tmp_path):
    """The mini time-to-quality run (minutes on 2 shared CPU cores; see configs/mini.py)."""
    c = _config("mini", data_dir=str(shared_data_dir), cache_dir=str(tmp_path / "cache"))
    summary = train.train_and_evaluate(c, tmp_path / "run")
    assert summary["status"] == "success", summary["quality_history"]
    assert summary["final_quality"] >= c.target_value
    result = mllog.check_compliance(tmp_path / "run" / "mlperf_log.txt")
    # Everything passes but the ruleset's WMT threshold (BLEU 0.25), which is not this target.
    assert not result.valid and result.failed_checks() == QUALITY_FAILURE, result.output
