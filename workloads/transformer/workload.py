"""MLPerf Transformer (non-recurrent translation): the workload contract.

Train on packed rows with label-smoothed cross-entropy and Adam under the rsqrt schedule; evaluate
by beam search on device (inside the jitted eval step), detokenize on the host and score with
sacreBLEU. BLEU is reported as a fraction (0.25 = 25.0 BLEU), the unit of the MLPerf log and its
checker.

BLEU as the reference computes it: mlcommons/training v0.7
`translation/tensorflow/transformer/compute_bleu.py` (`bleu_wrapper(..., case_sensitive=False)`)
lowercases references and hypotheses, tokenizes both with `bleu_tokenize` (split around every
Unicode punctuation character not between digits and around every symbol: mteval-v14's
international tokenization) and takes corpus BLEU-4 with brevity penalty and, for an n-gram order
with no match, precision 1 / (2^k * candidates). That is sacreBLEU with `tokenize="intl"`,
`lowercase=True` and its default `smooth_method="exp"`; tests check the two agree.

The data is prepared offline (`tpubench prepare transformer --config=...`, see
`tpubench/datasets/prepared_text.py`); a run without it fails in `check_data`, before any compute.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import optax

from tpubench.datasets import prepared_text as prepared
from tpubench.datasets import translation as ip
from tpubench.errors import UsageError
from tpubench.evaluation import EvalOutput
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.tasks.translation import PreparedTranslation
from tpubench.text.ids import EOS_ID
from tpubench.workload import Batch, PyTree, Workload
from workloads.transformer import decode as decode_lib
from workloads.transformer import input_pipeline
from workloads.transformer import model as model_lib
from workloads.transformer.tunables import CLOSED_TUNABLES

TRAIN_KEYS = tuple(
    f"{k}{suffix}" for k in ip.PACKED_KEYS for suffix in ("", "_position", "_segmentation")
)


def rsqrt_schedule(base: float, emb_dim: int, warmup_steps: int) -> optax.Schedule:
    """base * d^-0.5 * min(s / warmup^1.5, s^-0.5) with s = step + 1 (Vaswani et al. 2017)."""

    def schedule(count: jax.Array) -> jax.Array:
        s = jnp.asarray(count, jnp.float32) + 1.0
        return base * emb_dim**-0.5 * jnp.minimum(s * warmup_steps**-1.5, jax.lax.rsqrt(s))

    return schedule


_check_multi30k = PreparedTranslation.check_multi30k_files


def _prepared_train(w: TransformerWorkload, start_step: int, process_index: int,
                    process_count: int) -> Iterator[Batch]:
    """Prepared packed rows, reshuffled every epoch by (seed, epoch)."""
    sources, targets, rows = prepared.load_train(w.config)
    return input_pipeline.train_batches(ip.Pairs(sources, targets, []), rows, w.config,
                                        start_step, process_index, process_count)


_eval_batches = PreparedTranslation.eval_batches_padded

# Both read the data `tpubench prepare transformer` wrote (prepared_text.py); they differ in the
# raw corpora that step reads.
DATA_SOURCES = {
    "tfds": DataSource(
        "WMT17 en-de from tensorflow-datasets, prepared once with `tpubench prepare "
        "transformer --config=...`", _prepared_train, _eval_batches),
    "multi30k": DataSource(
        "the mini: the Multi30k en-de files in config.data.dir, prepared once with `tpubench "
        "prepare transformer --config=mini`", _prepared_train, _eval_batches, _check_multi30k),
}


class TransformerWorkload(PreparedTranslation, Workload):
    """Transformer-big on WMT17 En-De (full) or a small Transformer on Multi30k (mini)."""

    name = "transformer"
    mlperf_name = "transformer"
    data_sources = DATA_SOURCES
    closed_tunables = CLOSED_TUNABLES  # what closed division lets an override change

    def __init__(self, config):
        super().__init__(config)
        c = config
        if c.data.tokenizer == "bpe":
            raise UsageError(
                "data.tokenizer='bpe' is the GNMT reference's vocabulary (ids PAD 0, UNK 1, BOS 2, "
                "EOS 3); the Transformer's ids need data.tokenizer='subword' (its reference's) "
                "or 'sentencepiece'.")
        if (c.submission.division == "closed" and c.data.source == "tfds"
                and c.data.tokenizer == "subword" and not c.data.get("vocab_file")):
            # A vocabulary built from tfds's copy of the corpora samples other lines than the
            # reference's files (tfds stores examples in another order), so it is not the
            # reference's vocab.ende.32768: not the closed-division benchmark.
            c.submission.division = "open"
            c.is_mlperf = False
            c.submission.open_division_reason = (
                "vocabulary built from tfds-ordered samples of the corpora, not the reference's "
                "vocab.ende.32768 (give it with --config.data.vocab_file=PATH for closed division)")
            with c.unlocked():
                s = c.submission
                s.open_reasons = (*tuple(s.get("open_reasons", ())), s.open_division_reason)
        self._host: dict[str, Any] = {}  # manifest, tokenizer and data, loaded on first use

    @property
    def model_config(self) -> model_lib.TransformerConfig:
        """Model hyperparameters; positions cover the longest train row, eval input and
        decode."""
        c = self.config
        return model_lib.TransformerConfig(
            vocab_size=c.model.vocab_size, emb_dim=c.model.emb_dim, num_heads=c.model.num_heads,
            num_layers=c.model.num_layers, mlp_dim=c.model.mlp_dim,
            max_len=max(c.data.max_len, self.eval_input_len, self.decode_len),
            dropout_rate=c.model.dropout_rate,
            attention_dropout_rate=c.model.attention_dropout_rate,
            dtype=compute_dtype(c.model.dtype),
        )

    @property
    def eval_input_len(self) -> int:
        """Eval source width: `max_eval_input_len`, or (0) the longest prepared eval source.

        Without prepared data (synthetic data; `tpubench fit` and parameter counts, which
        compile shapes only) 0 means `max_len`; runs on real data check the manifest first."""
        c = self.config
        if c.data.max_eval_input_len > 0:
            return int(c.data.max_eval_input_len)
        if c.data.source == "synthetic" or not prepared.is_prepared(c):
            return int(c.data.max_len)
        return max(1, int(self.manifest()["max_eval_source_len"]))

    @property
    def decode_len(self) -> int:
        """Decoded tokens: `max_decode_len`, or (0) the eval input length + 50 (the reference's
        `extra_decode_length`)."""
        return int(self.config.eval.max_decode_len) or self.eval_input_len + 50

    @property
    def train_samples(self) -> int:
        """Packed rows per epoch, as counted by the prepare step (synthetic: the config's)."""
        if self.config.data.source == "synthetic":
            return int(self.config.data.train_samples)
        return int(self.manifest()["train_rows"])

    @property
    def eval_samples(self) -> int:
        """Eval sentences, as counted by the prepare step (synthetic: the config's)."""
        if self.config.data.source == "synthetic":
            return int(self.config.eval.samples)
        return int(self.manifest()["eval_examples"])

    # ---- model --------------------------------------------------------------------------------
    def model(self, train: bool = False) -> model_lib.Transformer:
        """The Transformer; `train` turns dropout on."""
        return model_lib.Transformer(
            dataclasses.replace(self.model_config, deterministic=not train))

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        """Train: packed [batch, max_len] rows; eval: source ids, example_id and mask."""
        c = self.config
        if train:
            return {k: jax.ShapeDtypeStruct((batch_size, c.data.max_len), jnp.int32)
                    for k in TRAIN_KEYS}
        return {
            "inputs": jax.ShapeDtypeStruct((batch_size, self.eval_input_len), jnp.int32),
            "example_id": jax.ShapeDtypeStruct((batch_size,), jnp.int32),
            "mask": jax.ShapeDtypeStruct((batch_size,), jnp.float32),
        }

    def init(self, rng: jax.Array) -> tuple[PyTree, PyTree]:
        """Params (boxed with logical axis names); the model has no other state."""
        x = jnp.zeros((1, self.config.data.max_len), jnp.int32)
        variables = self.model().init({"params": rng, "dropout": rng}, x, x)
        return variables["params"], {}

    def loss(self, params, model_state, batch, rng):
        """Label-smoothed cross-entropy per non-pad target token."""
        logits = self.model(train=True).apply(
            {"params": params}, batch["inputs"], batch["targets"],
            input_positions=batch["inputs_position"], target_positions=batch["targets_position"],
            input_segmentation=batch["inputs_segmentation"],
            target_segmentation=batch["targets_segmentation"], rngs={"dropout": rng},
        )
        targets = batch["targets"]
        weights = (targets > 0).astype(jnp.float32)
        smoothing = self.config.model.label_smoothing
        # Cross-entropy against optax.smooth_labels(one_hot(targets), smoothing), without
        # materialising the [batch, length, vocab] one-hot.
        logits = logits.astype(jnp.float32)
        nll = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
        uniform = -jnp.mean(jax.nn.log_softmax(logits), axis=-1)
        xent = (1.0 - smoothing) * nll + smoothing * uniform
        tokens = jnp.maximum(weights.sum(), 1.0)
        loss = (xent * weights).sum() / tokens
        accuracy = ((jnp.argmax(logits, -1) == targets) * weights).sum() / tokens
        return loss, (model_state, {"accuracy": accuracy})

    def optimizer(self) -> optax.GradientTransformation:
        """Adam(b1, b2, eps) under the rsqrt-with-warmup schedule."""
        c = self.config
        o = c.optimizer
        return optax.adam(self._schedule(), b1=o.beta_1, b2=o.beta_2, eps=o.epsilon)

    def _schedule(self) -> optax.Schedule:
        c = self.config
        return rsqrt_schedule(c.optimizer.learning_rate, c.model.emb_dim, c.schedule.warmup_steps)

    def learning_rate(self, step):
        """The scheduled learning rate at `step`."""
        return self._schedule()(step)

    # ---- eval ---------------------------------------------------------------------------------
    def translate(self, params: PyTree, inputs: jax.Array) -> jax.Array:
        """Beam-search translations [batch, max_decode_len] of source ids [batch, in_len]."""
        c = self.config
        model, model_config = self.model(), self.model_config
        variables = {"params": params}
        encoded = model.apply(variables, inputs, method=model_lib.Transformer.encode)
        encoded, inputs = decode_lib.expand_beams((encoded, inputs), c.eval.beam_size)
        cross_kv = model.apply(variables, encoded, method=model_lib.Transformer.cross_kv)
        cache = {
            "layers": model_lib.init_cache(model_config, inputs.shape[0], self.decode_len),
            "index": jnp.zeros([], jnp.int32),
        }

        def tokens_to_logits(ids: jax.Array, cache: dict) -> tuple[jax.Array, dict]:
            logits, layers = model.apply(
                variables, ids, cache["index"], inputs, cross_kv, cache["layers"],
                method=model_lib.Transformer.decode_step)
            return logits, {"layers": layers, "index": cache["index"] + 1}

        decoded, _ = decode_lib.beam_search(
            tokens_to_logits, cache, inputs.shape[0] // c.eval.beam_size, c.eval.beam_size,
            self.decode_len, EOS_ID, c.eval.beam_alpha,
        )
        return decoded

    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per-example decoded ids (and which example each row is): BLEU needs the host."""
        return EvalOutput(per_example={"decoded": self.translate(params, batch["inputs"]),
                                       "example_id": batch["example_id"]})

    # ---- data -----------------------------------------------------------------------------------
    def prepare(self) -> pathlib.Path | None:
        """Offline: read the corpora, build the vocabulary, tokenize and pack
        (`tpubench/datasets/prepared_text.py`)."""
        c = self.config
        if c.data.source == "synthetic":
            return None
        self.data_source().check(self)
        return prepared.prepare(c, lambda: ip.read_train_corpora(c), lambda: ip.read_eval(c))

    def check_data(self) -> None:
        """Before any compute: the source's files (`DATA_SOURCES`), then the prepared data
        exists and its eval inputs fit (manifest and paths only: the data itself is read after
        run_start)."""
        super().check_data()
        self.check_prepared()

    def synthetic_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """One segment per row of random (non-special) tokens."""
        c = self.config
        shape = (batch_size, c.data.max_len)
        k1, k2 = jax.random.split(rng)
        position = jnp.broadcast_to(jnp.arange(c.data.max_len, dtype=jnp.int32), shape)
        ones = jnp.ones(shape, jnp.int32)
        return {
            "inputs": jax.random.randint(k1, shape, 3, c.model.vocab_size, jnp.int32),
            "targets": jax.random.randint(k2, shape, 3, c.model.vocab_size, jnp.int32),
            "inputs_position": position, "targets_position": position,
            "inputs_segmentation": ones, "targets_segmentation": ones,
        }

    # ---- log ----------------------------------------------------------------------------------
    def mllog_hyperparameters(self) -> dict[str, Any]:
        """Every key closed_transformer.yaml requires exactly once.

        A (value, metadata) tuple asks the harness to log `value` with that metadata.
        """
        c = self.config
        return {
            "global_batch_size": int(c.data.global_batch_size),
            "opt_name": "adam",
            "opt_base_learning_rate": float(c.optimizer.learning_rate),
            "opt_learning_rate_warmup_steps": int(c.schedule.warmup_steps),
            "opt_adam_beta_1": float(c.optimizer.beta_1),
            "opt_adam_beta_2": float(c.optimizer.beta_2),
            "opt_adam_epsilon": float(c.optimizer.epsilon),
            # (value, metadata): the checker requires metadata.method on this key.
            "max_sequence_length": (int(c.data.max_len), {"method": "discard"}),
        }
