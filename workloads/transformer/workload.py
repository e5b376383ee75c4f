"""MLPerf Transformer (non-recurrent translation): the workload contract.

Train on packed rows with label-smoothed cross-entropy and Adam under the rsqrt schedule; evaluate
by beam search on device (inside the jitted eval step), detokenize on the host and score with
sacreBLEU (uncased). BLEU is reported as a fraction (0.25 = 25.0 BLEU), the unit of the MLPerf
log and its checker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import sacrebleu

from tpubench.errors import UsageError
from tpubench.workload import Batch, PyTree, Workload
from workloads.transformer import decode as decode_lib
from workloads.transformer import input_pipeline as ip
from workloads.transformer import model as model_lib

TRAIN_KEYS = tuple(
    f"{k}{suffix}" for k in ip.PACKED_KEYS for suffix in ("", "_position", "_segmentation")
)


def rsqrt_schedule(base: float, emb_dim: int, warmup_steps: int) -> optax.Schedule:
    """base * d^-0.5 * min(s / warmup^1.5, s^-0.5) with s = step + 1 (Vaswani et al. 2017)."""

    def schedule(count: jax.Array) -> jax.Array:
        s = jnp.asarray(count, jnp.float32) + 1.0
        return base * emb_dim**-0.5 * jnp.minimum(s * warmup_steps**-1.5, jax.lax.rsqrt(s))

    return schedule


class TransformerWorkload(Workload):
    """Transformer-big on WMT17 En-De (full) or a small Transformer on Multi30k (mini)."""

    name = "transformer"
    mlperf_name = "transformer"

    def __init__(self, config):
        super().__init__(config)
        c = config
        if c.data_source not in ("synthetic", "tfds", "multi30k"):
            raise UsageError(
                f"transformer: unknown data_source {c.data_source!r}; use synthetic, tfds or "
                "multi30k."
            )
        self.model_config = model_lib.TransformerConfig(
            vocab_size=c.vocab_size, emb_dim=c.emb_dim, num_heads=c.num_heads,
            num_layers=c.num_layers, mlp_dim=c.mlp_dim,
            max_len=max(c.max_len, c.max_eval_input_len, c.max_decode_len),
            dropout_rate=c.dropout_rate, attention_dropout_rate=c.attention_dropout_rate,
            dtype=jnp.dtype(c.dtype),
        )
        self._host: dict[str, Any] = {}  # tokenizer and eval pairs, loaded on first use

    # ---- model --------------------------------------------------------------------------------
    def model(self, train: bool = False) -> model_lib.Transformer:
        """The Transformer; `train` turns dropout on."""
        return model_lib.Transformer(
            dataclasses.replace(self.model_config, deterministic=not train))

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        """Train: packed [batch, max_len] rows; eval: source ids, example_id and mask."""
        c = self.config
        if train:
            return {k: jax.ShapeDtypeStruct((batch_size, c.max_len), jnp.int32) for k in TRAIN_KEYS}
        return {
            "inputs": jax.ShapeDtypeStruct((batch_size, c.max_eval_input_len), jnp.int32),
            "example_id": jax.ShapeDtypeStruct((batch_size,), jnp.int32),
            "mask": jax.ShapeDtypeStruct((batch_size,), jnp.float32),
        }

    def init(self, rng: jax.Array) -> tuple[PyTree, PyTree]:
        """Params (boxed with logical axis names); the model has no other state."""
        x = jnp.zeros((1, self.config.max_len), jnp.int32)
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
        smoothing = self.config.label_smoothing
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
        return optax.adam(self._schedule(), b1=c.adam_b1, b2=c.adam_b2, eps=c.adam_eps)

    def _schedule(self) -> optax.Schedule:
        c = self.config
        return rsqrt_schedule(c.learning_rate, c.emb_dim, c.warmup_steps)

    def learning_rate(self, step):
        """The scheduled learning rate at `step`."""
        return self._schedule()(step)

    # ---- eval ---------------------------------------------------------------------------------
    def translate(self, params: PyTree, inputs: jax.Array) -> jax.Array:
        """Beam-search translations [batch, max_decode_len] of source ids [batch, in_len]."""
        c = self.config
        model = self.model()
        variables = {"params": params}
        encoded = model.apply(variables, inputs, method=model_lib.Transformer.encode)
        encoded, inputs = decode_lib.expand_beams((encoded, inputs), c.beam_size)
        cross_kv = model.apply(variables, encoded, method=model_lib.Transformer.cross_kv)
        cache = {
            "layers": model_lib.init_cache(self.model_config, inputs.shape[0], c.max_decode_len),
            "index": jnp.zeros([], jnp.int32),
        }

        def tokens_to_logits(ids: jax.Array, cache: dict) -> tuple[jax.Array, dict]:
            logits, layers = model.apply(
                variables, ids, cache["index"], inputs, cross_kv, cache["layers"],
                method=model_lib.Transformer.decode_step)
            return logits, {"layers": layers, "index": cache["index"] + 1}

        decoded, _ = decode_lib.beam_search(
            tokens_to_logits, cache, inputs.shape[0] // c.beam_size, c.beam_size,
            c.max_decode_len, model_lib.EOS_ID, c.beam_alpha,
        )
        return decoded

    def eval_step(self, params, model_state, batch):
        """Per-example decoded ids (and which example each row is): BLEU needs the host."""
        return {"decoded": self.translate(params, batch["inputs"]),
                "example_id": batch["example_id"]}

    def eval_finalize(self, results: Mapping[str, np.ndarray]) -> float:
        """Corpus sacreBLEU (uncased) of the detokenized translations, as a fraction."""
        if self.config.data_source == "synthetic":
            return 0.0  # synthetic data measures speed; there are no references
        keep = np.asarray(results["mask"]) > 0
        ids = np.asarray(results["example_id"])[keep]
        hyps = self.tokenizer().decode(np.asarray(results["decoded"])[keep])
        pairs = self.eval_pairs()
        if sorted(ids.tolist()) != list(range(len(pairs.references))):
            raise ValueError(
                f"eval covered {len(ids)} examples, expected each of {len(pairs.references)} once")
        order = np.argsort(ids)
        refs = [pairs.references[i] for i in ids[order]]
        bleu = sacrebleu.corpus_bleu(
            [hyps[i] for i in order], [refs], lowercase=True, tokenize=self.config.bleu_tokenize)
        return bleu.score / 100.0

    # ---- data -----------------------------------------------------------------------------------
    def check_data(self) -> None:
        """Path/metadata checks only: the data itself is read after run_start."""
        c = self.config
        if c.data_source == "multi30k":
            ip.check_multi30k(
                c.data_dir, (c.source_lang, c.target_lang), ("train", c.eval_split))
        elif c.data_source == "tfds":
            import tensorflow_datasets as tfds

            for name in (c.tfds_train, c.tfds_eval):
                builder = tfds.builder(name, data_dir=c.get("tfds_data_dir") or None)
                if not builder.is_prepared():
                    raise UsageError(
                        f"tfds dataset {name} is not prepared in {builder.data_dir}. Prepare it "
                        f"with `tfds build {name}` (or set --config.tfds_data_dir)."
                    )

    def _train_text(self) -> list[tuple[str, str]]:
        if "train_text" not in self._host:
            self._host["train_text"] = ip.raw_pairs(self.config, train=True)()
        return self._host["train_text"]

    def tokenizer(self):
        """The shared subword vocabulary (trained from the training text once, then cached)."""
        if "tokenizer" not in self._host:
            self._host["tokenizer"] = ip.get_tokenizer(self.config, self._train_text)
        return self._host["tokenizer"]

    def eval_pairs(self) -> ip.Pairs:
        """The tokenized eval set with its raw references."""
        if "eval" not in self._host:
            raw = ip.raw_pairs(self.config, train=False)()
            self._host["eval"] = ip.tokenize_pairs(self.tokenizer(), raw, self.config.lowercase)
        return self._host["eval"]

    def train_batches(
        self, start_step: int, process_index: int, process_count: int
    ) -> Iterator[Batch]:
        """Packed rows, reshuffled every epoch by (seed, epoch)."""
        pairs = ip.cached_train_pairs(self.config, self.tokenizer(), self._train_text)
        self._host.pop("train_text", None)  # only the ids are needed from here on
        return ip.train_batches(pairs, self.config, start_step, process_index, process_count)

    def eval_batches(self, process_index: int, process_count: int) -> Iterator[Batch]:
        """The whole eval split in fixed-shape batches padded with mask 0."""
        c = self.config
        return ip.eval_batches(
            self.eval_pairs(), c.eval_batch_size, c.max_eval_input_len, process_index,
            process_count)

    def synthetic_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """One segment per row of random (non-special) tokens."""
        c = self.config
        shape = (batch_size, c.max_len)
        k1, k2 = jax.random.split(rng)
        position = jnp.broadcast_to(jnp.arange(c.max_len, dtype=jnp.int32), shape)
        ones = jnp.ones(shape, jnp.int32)
        return {
            "inputs": jax.random.randint(k1, shape, 3, c.vocab_size, jnp.int32),
            "targets": jax.random.randint(k2, shape, 3, c.vocab_size, jnp.int32),
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
            "global_batch_size": int(c.global_batch_size),
            "opt_name": "adam",
            "opt_base_learning_rate": float(c.learning_rate),
            "opt_learning_rate_warmup_steps": int(c.warmup_steps),
            "opt_adam_beta_1": float(c.adam_b1),
            "opt_adam_beta_2": float(c.adam_b2),
            "opt_adam_epsilon": float(c.adam_eps),
            # (value, metadata): the checker requires metadata.method on this key.
            "max_sequence_length": (int(c.max_len), {"method": "discard"}),
        }
