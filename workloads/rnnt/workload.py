"""RNN-T speech recognition (MLPerf Inference v0.7 `rnnt`): the contract, nothing else.

The model, features and greedy decoder are the v0.7 inference reference's
(speech_recognition/rnnt); training uses the RNN-T loss of `workloads.rnnt.loss` (the
inference benchmark has no training reference: the trainable configs are the mini and smoke).
Quality is the corpus word error rate (jiwer), lower is better.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.workload import Workload
from workloads.rnnt import decode, input_pipeline, librispeech, model, text
from workloads.rnnt.loss import rnnt_loss

DATA_SOURCES = {
    "fsdd": DataSource.of_config(
        "the mini: multi-digit utterances of Free Spoken Digit Dataset recordings in "
        "config.data.dir/fsdd/recordings, eval on held-out speakers",
        input_pipeline.fsdd_train, input_pipeline.fsdd_eval, check=input_pipeline.check_fsdd),
    "tfds": DataSource.of_config(
        "LibriSpeech from tensorflow-datasets (librispeech) in config.data.dir; eval: "
        "dev-clean under 15 s as the reference",
        librispeech.train_batches, librispeech.eval_batches, check=librispeech.check),
}


class RNNTWorkload(Workload):
    """Transducer ASR: log-mel features, LSTM encoder/prediction, joint; greedy decoding; WER."""

    name = "rnnt"
    mlperf_name = "rnnt"
    data_sources = DATA_SOURCES

    def model(self) -> model.RNNT:
        m = self.config.model
        return model.RNNT(
            num_classes=text.NUM_CLASSES, encoder_hidden=m.encoder_hidden,
            encoder_pre_layers=m.encoder_pre_layers, encoder_post_layers=m.encoder_post_layers,
            stack_time_factor=m.stack_time_factor, pred_hidden=m.pred_hidden,
            pred_layers=m.pred_layers, joint_hidden=m.joint_hidden, dropout=m.dropout,
            forget_gate_bias=m.forget_gate_bias,
            dtype=compute_dtype(m.dtype, else_float32=True))

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """LSTM gate rows split over "tensor"; everything else left to the FSDP rule."""
        return (("rnn_gates", "tensor"), ("rnn_in", None), ("rnn_hidden", None),
                ("joint_hidden", None), ("joint_in", None), ("joint_out", None),
                ("symbols", None), ("pred_hidden", None))

    @property
    def in_features(self) -> int:
        """Model input features per frame: features x frame_splicing (80 x 3 = 240 in full)."""
        return int(self.config.data.features) * int(self.config.data.frame_splicing)

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        d = self.config.data
        spec = {
            "features": jax.ShapeDtypeStruct((batch_size, d.max_frames, self.in_features),
                                             jnp.float32),
            "feature_lens": jax.ShapeDtypeStruct((batch_size,), jnp.int32),
            "labels": jax.ShapeDtypeStruct((batch_size, d.max_label_len), jnp.int32),
            "label_lens": jax.ShapeDtypeStruct((batch_size,), jnp.int32),
        }
        if not train:
            spec["mask"] = jax.ShapeDtypeStruct((batch_size,), jnp.float32)
        return spec

    def init(self, rng: jax.Array) -> tuple[Any, Any]:
        """Params (boxed with logical names) from a one-example zero batch; no other state."""
        d = self.config.data
        variables = self.model().init(
            {"params": rng, "dropout": rng}, jnp.zeros((1, d.max_frames, self.in_features)),
            jnp.full((1,), d.max_frames, jnp.int32), jnp.zeros((1, d.max_label_len), jnp.int32))
        return variables["params"], {}

    def loss(self, params, model_state, batch, rng):
        """Mean over the batch of the per-utterance RNN-T negative log-likelihood."""
        logits, enc_lens = self.model().apply(
            {"params": params}, batch["features"], batch["feature_lens"], batch["labels"],
            train=True, rngs={"dropout": rng})
        nll = rnnt_loss(logits, batch["labels"], enc_lens, batch["label_lens"], text.BLANK)
        loss = nll.mean()
        per_label = nll.sum() / jnp.maximum(batch["label_lens"].sum(), 1)
        return loss, (model_state, {"loss": loss, "nll_per_label": per_label})

    def optimizer(self) -> optax.GradientTransformation:
        """Adam under linear warmup + polynomial decay, after global-norm gradient clipping."""
        o = self.config.optimizer
        return optax.chain(
            optax.clip_by_global_norm(o.grad_clip_norm),
            optax.adam(self._schedule(), b1=o.beta_1, b2=o.beta_2, eps=o.epsilon))

    def _schedule(self) -> optax.Schedule:
        c, s = self.config, self.config.schedule
        warmup = optax.linear_schedule(0.0, c.optimizer.learning_rate, max(s.warmup_steps, 1))
        decay = optax.polynomial_schedule(
            c.optimizer.learning_rate, s.end_learning_rate, s.decay_power,
            max(s.train_steps - s.warmup_steps, 1))
        return optax.join_schedules([warmup, decay], [s.warmup_steps])

    def learning_rate(self, step):
        return self._schedule()(step)

    def decode(self, params: Any, features: jax.Array, feature_lens: jax.Array
               ) -> tuple[jax.Array, jax.Array]:
        """Greedy decoding (the reference's): (ids [B, max_output_len], counts [B])."""
        m = self.config.model
        return decode.greedy_decode(self.model(), params, features, feature_lens,
                                    m.max_symbols_per_step, m.max_output_len)

    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per example: the greedy hypothesis and the reference labels (WER on the host)."""
        ids, counts = self.decode(params, batch["features"], batch["feature_lens"])
        return EvalOutput(per_example={"ids": ids, "counts": counts, "labels": batch["labels"],
                                       "label_lens": batch["label_lens"]})

    def eval_finalize(self, results: EvalResults) -> float:
        """Corpus WER (jiwer) of the hypotheses against the transcripts."""
        p = {k: np.asarray(v) for k, v in results.per_example.items()}
        hyps = text.decode_rows(p["ids"], p["counts"])
        refs = text.decode_rows(p["labels"], p["label_lens"])
        return text.word_error_rate(hyps, refs)

    def synthetic_batch(self, rng: jax.Array, batch_size: int) -> dict[str, jax.Array]:
        """Normal features at full length, random non-blank labels of random length >= 1."""
        d = self.config.data
        k1, k2, k3 = jax.random.split(rng, 3)
        return {
            "features": jax.random.normal(k1, (batch_size, d.max_frames, self.in_features)),
            "feature_lens": jnp.full((batch_size,), d.max_frames, jnp.int32),
            "labels": jax.random.randint(k2, (batch_size, d.max_label_len), 0, text.BLANK,
                                         jnp.int32),
            "label_lens": jax.random.randint(k3, (batch_size,), 1, d.max_label_len + 1,
                                             jnp.int32),
        }

    def check_data(self) -> None:
        """The data source's check, and jiwer (the WER) importable, before any compute."""
        super().check_data()
        text.require_jiwer()

    def mllog_hyperparameters(self) -> dict[str, Any]:
        c = self.config
        return {"global_batch_size": int(c.data.global_batch_size), "opt_name": "adam",
                "opt_base_learning_rate": float(c.optimizer.learning_rate)}
