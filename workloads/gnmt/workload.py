"""MLPerf GNMT (recurrent translation): the workload contract.

Train GNMT-v2 (`model.py`) with label-smoothed cross-entropy summed over target tokens and
divided by the batch size (reference `seq2seq/train/trainer.py`: `loss /= B * iter_size`;
`train/smoothing.py`), Adam with gradient-norm clipping 5 under the reference's
`WarmupMultiStepLR` (`seq2seq/train/lr_scheduler.py`). Evaluate by beam search on device
(`decode.py`), detokenize on the host and score with sacreBLEU uncased with the international
tokenization, as the reference's `seq2seq/inference/inference.py` runs
`sacrebleu --input DETOK REF --score-only -lc --tokenize intl` (`corpus_bleu` of
`tpubench/tasks/translation.py`, shared with the Transformer). BLEU is logged as a fraction
(0.24 = 24.0 BLEU).

Data: the sentence pairs the translation prepare step writes (`tpubench/datasets/prepared_text.py`,
shared with the Transformer, under `cache_dir/gnmt/`): Multi30k (mini) or the WMT16 corpora
through tfds (full), in the full config with the reference's Moses + BPE vocabulary
(`data.tokenizer="bpe"`, `tpubench/text/moses_bpe.py`). Pairs longer than
`data.max_len` tokens with the reference's start and end tokens counted (`--max-length-train
50`, "including special BOS and EOS tokens") are discarded. Ids: with the BPE vocabulary the
reference's (PAD 0, UNK 1, BOS 2 = the decoder's start token, EOS 3); with the mini's
SentencePiece (or the subword) vocabulary 0 = PAD (also the decoder's start token), 1 = EOS.
A kept pair has at most `max_len - 1` ids with EOS on each side. With the BPE vocabulary the
encoder reads `<s>` words `<\\s>` as the reference's (`tokenizer.segment`: BOS is prepended to
every source, train and eval), so its inputs are one id wider than the targets (whose BOS is
the decoder's start token); with the mini's vocabularies (no BOS) sources end in EOS only.
"""

from __future__ import annotations

import copy
import pathlib
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from tpubench.datasets import prepared_text as prepared
from tpubench.datasets import translation as ip
from tpubench.errors import UsageError
from tpubench.evaluation import EvalOutput
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.tasks.translation import PreparedTranslation
from tpubench.text import moses_bpe
from tpubench.text.ids import PAD_ID
from tpubench.workload import Batch, PyTree, Workload
from workloads.gnmt import decode as decode_lib
from workloads.gnmt import model as model_lib
from workloads.gnmt.tunables import CLOSED_TUNABLES


def warmup_multistep(base: float, total_steps: int, warmup_steps: int, remain_steps: int,
                     decay_interval: int, decay_steps: int, decay_factor: float
                     ) -> optax.Schedule:
    """The reference's `WarmupMultiStepLR` (lr_scheduler.py) for optax's `count` (0-based):
    update `count` + 1 runs at the reference's `last_epoch` t = count + 1 (torch 1.0's scheduler
    sets last_epoch 0 when built, and fp_optimizers.py lines 104-105 / 161-162 call
    `scheduler.step()` before each `optimizer.step()`): exponential warmup
    base * 0.01 ** ((warmup - t) / warmup) while t <= `warmup_steps`, then `base`, then from
    `remain_steps` on base * factor ** min(1 + (t - remain) // interval, decay_steps)."""
    del total_steps  # the caller derived remain_steps and decay_interval from it

    def schedule(count: jax.Array) -> jax.Array:
        t = jnp.asarray(count, jnp.float32) + 1.0
        if warmup_steps > 0:
            warm = base * jnp.power(0.01, (warmup_steps - t) / warmup_steps)
        else:
            warm = jnp.asarray(base, jnp.float32)
        n = jnp.minimum((t - remain_steps) // decay_interval + 1, decay_steps)
        decayed = base * jnp.power(decay_factor, n)
        return jnp.where(t <= warmup_steps, warm,
                         jnp.where(t >= remain_steps, decayed, base)).astype(jnp.float32)

    return schedule


_check_multi30k = PreparedTranslation.check_multi30k_files


def _train(w: GNMTWorkload, start_step: int, process_index: int,
           process_count: int) -> Iterator[Batch]:
    return w.train_batches_from_pairs(start_step, process_index, process_count)


def _eval(w: GNMTWorkload, process_index: int, process_count: int) -> Iterator[Batch]:
    return map(w.with_source_bos, w.eval_batches_padded(process_index, process_count))


DATA_SOURCES = {
    "tfds": DataSource(
        "WMT16 en-de from tensorflow-datasets, prepared once with `tpubench prepare gnmt "
        "--config=...`", _train, _eval),
    "multi30k": DataSource(
        "the mini: the Multi30k de-en files in config.data.dir, prepared once with `tpubench "
        "prepare gnmt --config=mini`", _train, _eval, _check_multi30k),
}


class GNMTWorkload(PreparedTranslation, Workload):
    """GNMT-v2 on WMT16 En-De (full) or a small GNMT on Multi30k (mini)."""

    name = "gnmt"
    mlperf_name = "gnmt"
    data_sources = DATA_SOURCES
    closed_tunables = CLOSED_TUNABLES  # what closed division lets an override change

    def __init__(self, config: ml_collections.ConfigDict):
        super().__init__(config)
        c = config
        if (c.submission.division == "closed" and c.data.source == "tfds"
                and c.data.tokenizer != "bpe"):
            # The reference learns 32,000 BPE merges with subword-nmt on Moses-tokenized text
            # (data.tokenizer="bpe", tpubench/text/moses_bpe.py); any other vocabulary
            # is not the closed benchmark.
            c.submission.division = "open"
            c.is_mlperf = False
            c.submission.open_division_reason = (
                f"vocabulary: data.tokenizer={c.data.tokenizer!r}, not the reference's Moses "
                "tokenization and 32,000 subword-nmt BPE merges (data.tokenizer='bpe')")
            with c.unlocked():
                s = c.submission
                s.open_reasons = (*tuple(s.get("open_reasons", ())), s.open_division_reason)
        self._host: dict[str, Any] = {}

    @property
    def start_id(self) -> int:
        """The decoder's start token: BOS (2) in the reference's BPE vocabulary
        (`inference.py` insert_target_start, and its training targets begin with BOS); PAD (0)
        in the vocabularies without a BOS."""
        return moses_bpe.BOS_ID if self.config.data.tokenizer == "bpe" else PAD_ID

    @property
    def source_bos(self) -> int:
        """1 when sources begin with BOS (the reference's BPE vocabulary), else 0."""
        return int(self.config.data.tokenizer == "bpe")

    def with_source_bos(self, batch: Batch, xp: Any = np) -> Batch:
        """`batch` with BOS before every source row (the prepared and synthetic ids have none);
        `xp`: numpy for host batches, jax.numpy inside the synthetic-batch jits."""
        if not self.source_bos:
            return batch
        inputs = batch["inputs"]
        bos = xp.full((inputs.shape[0], 1), moses_bpe.BOS_ID, inputs.dtype)
        return {**batch, "inputs": xp.concatenate([bos, inputs], axis=1)}

    # ---- sizes ----------------------------------------------------------------------------------
    @property
    def seq_len(self) -> int:
        """Train width: ids with EOS, at most max_len - 1 (the reference also counts a BOS)."""
        return int(self.config.data.max_len) - 1

    def prepare_config(self) -> ml_collections.ConfigDict:
        """The config the shared prepare step sees: its `max_len` counts ids with EOS."""
        c = copy.deepcopy(self.config)
        c.data.max_len = self.seq_len
        return c

    @property
    def eval_input_len(self) -> int:
        """Eval source width: the longest prepared eval source (synthetic: `seq_len`)."""
        c = self.config
        if c.data.max_eval_input_len > 0:
            return int(c.data.max_eval_input_len)
        if c.data.source == "synthetic" or not prepared.is_prepared(self.prepare_config()):
            return self.seq_len
        return max(1, int(self.manifest()["max_eval_source_len"]))

    @property
    def train_samples(self) -> int:
        """Kept training pairs (the prepare step's count; synthetic data, or shapes-only uses
        such as `tpubench fit` before the data is prepared: the config's; a run on real data
        checks the manifest first, in `check_data`)."""
        c = self.config
        if c.data.source == "synthetic" or not prepared.is_prepared(self.prepare_config()):
            return int(c.data.train_samples)
        return int(self.manifest()["train_pairs_kept"])

    @property
    def eval_samples(self) -> int:
        """Eval sentences (the prepare step's count; synthetic: the config's)."""
        if self.config.data.source == "synthetic":
            return int(self.config.eval.samples)
        return int(self.manifest()["eval_examples"])

    # ---- model ----------------------------------------------------------------------------------
    def model(self, train: bool = False) -> model_lib.GNMT:
        """GNMT-v2; `train` turns dropout on."""
        c = self.config.model
        return model_lib.GNMT(model_lib.GNMTConfig(
            vocab_size=c.vocab_size, hidden_size=c.hidden_size, num_layers=c.num_layers,
            dropout_rate=c.dropout_rate, dtype=compute_dtype(c.dtype), deterministic=not train,
            init_weight=float(c.init_weight),
            attention_scale=float(c.attention_scale)))

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        """Train: source and target ids [batch, max_len - 1]; eval: sources, example_id, mask."""
        if train:
            return {"inputs": jax.ShapeDtypeStruct((batch_size, self.source_bos + self.seq_len),
                                                   jnp.int32),
                    "targets": jax.ShapeDtypeStruct((batch_size, self.seq_len), jnp.int32)}
        return {
            "inputs": jax.ShapeDtypeStruct((batch_size, self.source_bos + self.eval_input_len),
                                           jnp.int32),
            "example_id": jax.ShapeDtypeStruct((batch_size,), jnp.int32),
            "mask": jax.ShapeDtypeStruct((batch_size,), jnp.float32),
        }

    def init(self, rng: jax.Array) -> tuple[PyTree, PyTree]:
        """Params (boxed with logical axis names); the model has no other state."""
        x = jnp.ones((1, 2), jnp.int32)
        return self.model().init({"params": rng}, x, x)["params"], {}

    def loss(self, params, model_state, batch, rng):
        """Label-smoothed cross-entropy summed over non-pad target tokens, over batch size."""
        targets = batch["targets"]
        logits = self.model(train=True).apply(
            {"params": params}, batch["inputs"], model_lib.shift_right(targets, self.start_id),
            rngs={"dropout": rng})
        weights = (targets != PAD_ID).astype(jnp.float32)
        xent = smoothed_xent(logits, targets, self.config.model.label_smoothing)
        tokens = jnp.maximum(weights.sum(), 1.0)
        loss = (xent * weights).sum() / targets.shape[0]
        accuracy = ((jnp.argmax(logits, -1) == targets) * weights).sum() / tokens
        return loss, (model_state, {"accuracy": accuracy,
                                    "loss_per_token": (xent * weights).sum() / tokens})

    def optimizer(self) -> optax.GradientTransformation:
        """Gradient-norm clipping, then Adam under the reference's schedule."""
        o = self.config.optimizer
        return optax.chain(
            optax.clip_by_global_norm(o.grad_clip),
            optax.adam(self._schedule(), b1=o.beta_1, b2=o.beta_2, eps=o.epsilon))

    def schedule_steps(self) -> dict[str, int]:
        """The schedule's integer steps as the reference derives them (lr_scheduler.py):
        floats are fractions of the total iterations; decay_interval None = (total - remain)
        // decay_steps; warmup is capped at remain."""
        c = self.config
        s = c.schedule
        total = int(s.train_steps) or (
            int(s.epochs) * (self.train_samples // int(c.data.global_batch_size)))

        def steps(value: float | int) -> int:
            return int(value * total) if isinstance(value, float) else int(value)

        remain = steps(s.remain_steps)
        interval = (max((total - remain) // int(s.decay_steps), 1) if s.decay_interval is None
                    else steps(s.decay_interval))
        return {"total": total, "warmup": min(steps(s.warmup_steps), remain), "remain": remain,
                "interval": interval}

    def _schedule(self) -> optax.Schedule:
        s, st = self.config.schedule, self.schedule_steps()
        return warmup_multistep(self.config.optimizer.learning_rate, st["total"], st["warmup"],
                                st["remain"], st["interval"], int(s.decay_steps),
                                float(s.decay_factor))

    def learning_rate(self, step):
        """The scheduled learning rate at `step`."""
        return self._schedule()(step)

    # ---- eval -----------------------------------------------------------------------------------
    def translate(self, params: PyTree, inputs: jax.Array) -> jax.Array:
        """Beam-search translations [batch, max_decode_len] of source ids [batch, in_len]."""
        e = self.config.eval
        model = self.model()
        variables = {"params": params}
        beam = int(e.beam_size)
        encoded = model.apply(variables, inputs, method=model_lib.GNMT.encode)
        keys = model.apply(variables, encoded, method=model_lib.GNMT.attention_keys)
        src_mask = inputs != PAD_ID
        encoded, keys, src_mask = decode_lib.tile((encoded, keys, src_mask), beam)
        n = inputs.shape[0] * beam
        zeros = jnp.zeros((n, self.config.model.hidden_size), jnp.float32)
        cache = [(zeros, zeros)] * int(self.config.model.num_layers)

        def step(words: jax.Array, cache: Any) -> tuple[jax.Array, jax.Array, Any]:
            logits, weights, cache = model.apply(
                variables, words[:, None], encoded, keys, src_mask, cache,
                method=model_lib.GNMT.decode)
            return jax.nn.log_softmax(logits[:, 0]), weights[:, 0], cache

        decoded, _ = decode_lib.beam_search(
            step, cache, inputs.shape[0], beam, inputs.shape[1], int(e.max_decode_len) + 1,
            self.start_id, self.eos_id, float(e.len_norm_factor),
            float(e.len_norm_const), float(e.cov_penalty_factor))
        return decoded

    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per-example decoded ids (and which example each row is): BLEU needs the host."""
        return EvalOutput(per_example={"decoded": self.translate(params, batch["inputs"]),
                                       "example_id": batch["example_id"]})

    # ---- data -----------------------------------------------------------------------------------
    def prepare(self) -> pathlib.Path | None:
        """Offline: read the corpora, build the vocabulary, tokenize (the Transformer's step)."""
        c = self.prepare_config()
        if c.data.source == "synthetic":
            return None
        self.data_source().check(self)
        return prepared.prepare(c, lambda: ip.read_train_corpora(c), lambda: ip.read_eval(c))

    def check_data(self) -> None:
        """Before any compute: the source's files, then the prepared data's manifest."""
        super().check_data()
        self.check_prepared()

    def train_batches_from_pairs(self, start_step: int, process_index: int,
                                 process_count: int) -> Iterator[Batch]:
        """This process's slice of every global batch from `start_step`: each epoch visits the
        kept pairs in an order shuffled by (seed, epoch); its last partial batch is dropped."""
        c = self.config
        sources, targets, _ = prepared.load_train(self.prepare_config())
        pairs = ip.Pairs(sources, targets, [])
        kept = ip.keep_indices(pairs, self.seq_len)
        gbs = int(c.data.global_batch_size)
        local = gbs // process_count
        n_batches = len(kept) // gbs
        if n_batches == 0:
            raise UsageError(f"{len(kept)} training pairs, fewer than global_batch_size={gbs}.")
        epoch, first = divmod(start_step, n_batches)
        while True:
            order = kept[np.random.default_rng([c.run.seed, epoch]).permutation(len(kept))]
            for b in range(first, n_batches):
                start = b * gbs + process_index * local
                yield self.with_source_bos(
                    pad_pairs(pairs, order[start:start + local], self.seq_len))
            epoch, first = epoch + 1, 0

    def synthetic_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """Random (non-special) ids, full width, ending in EOS."""
        shape = (batch_size, self.seq_len)
        k1, k2 = jax.random.split(rng)
        v, low = self.config.model.vocab_size, max(3, self.eos_id + 1)
        return self.with_source_bos(
            {"inputs": jax.random.randint(k1, shape, low, v, jnp.int32)
             .at[:, -1].set(self.eos_id),
             "targets": jax.random.randint(k2, shape, low, v, jnp.int32)
             .at[:, -1].set(self.eos_id)}, jnp)

    def synthetic_eval_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """The translation eval batch, with BOS before each source under the BPE vocabulary."""
        return self.with_source_bos(super().synthetic_eval_batch(rng, batch_size), jnp)

    # ---- log ------------------------------------------------------------------------------------
    def mllog_hyperparameters(self) -> dict[str, Any]:
        """Every key of closed_gnmt.yaml (mlperf-logging 0.7.0) that must appear exactly once,
        with the values the reference logs (lr_scheduler.py, trainer.py, train.py)."""
        c = self.config
        st = self.schedule_steps()
        return {
            "global_batch_size": int(c.data.global_batch_size),
            "opt_base_learning_rate": float(c.optimizer.learning_rate),
            "opt_learning_rate_alt_decay_func": True,
            "opt_learning_rate_alt_warmup_func": True,
            "opt_learning_rate_decay_interval": st["interval"],
            "opt_learning_rate_decay_factor": float(c.schedule.decay_factor),
            "opt_learning_rate_decay_steps": int(c.schedule.decay_steps),
            "opt_learning_rate_remain_steps": st["remain"],
            "opt_learning_rate_warmup_steps": st["warmup"],
            "max_sequence_length": (int(c.data.max_len), {"method": "discard"}),
        }


def smoothed_xent(logits: jax.Array, targets: jax.Array, smoothing: float) -> jax.Array:
    """(1 - s) * NLL + s * mean over the vocabulary of -log p (reference smoothing.py)."""
    logprobs = jax.nn.log_softmax(logits.astype(jnp.float32))
    nll = -jnp.take_along_axis(logprobs, targets[..., None], axis=-1)[..., 0]
    return (1.0 - smoothing) * nll - smoothing * logprobs.mean(axis=-1)


def pad_pairs(pairs: ip.Pairs, indices: np.ndarray, width: int) -> dict[str, np.ndarray]:
    """[len(indices), width] source and target ids, zero-padded."""
    out = {k: np.zeros((len(indices), width), np.int32) for k in ("inputs", "targets")}
    for r, i in enumerate(indices.tolist()):
        out["inputs"][r, :len(pairs.sources[i])] = pairs.sources[i]
        out["targets"][r, :len(pairs.targets[i])] = pairs.targets[i]
    return out


