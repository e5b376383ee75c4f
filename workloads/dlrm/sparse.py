"""DLRM's row-sparse embedding update (issue 17.1), as TPU DLRM implementations do it.

The generic step differentiates the loss with respect to every parameter: each embedding
table's gradient is a dense [rows, 128] array (zeros except the rows the batch looked up), and
SGD then rewrites every row. With ~24B embedding parameters in the full config, that is ~96 GB
of gradient written and ~192 GB of table read and written per step for a batch that touches a
few thousand rows per table.

Here the step looks the rows up itself, differentiates with respect to the looked-up rows
[B, 128] per table (and the MLPs), and applies SGD to the tables as a scatter-add of
-lr x row gradient at the looked-up ids: repeated ids add up, exactly as the dense gradient
sums them, so the update is the same SGD step (float summation order aside). The MLPs get the
configured optax SGD. XLA partitions the scatter over row-sharded tables like the gather.

Only plain SGD (no momentum, no weight decay: the reference's optimizer) has a row-sparse form
that equals the dense one; any optimizer state shaped like the params refuses the sparse path.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

TABLE = "embedding_{}"


def click_loss(logits: jax.Array, labels: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(mean binary cross-entropy, accuracy) of click logits: the loss of both steps."""
    loss = optax.sigmoid_binary_cross_entropy(logits, labels).mean()
    return loss, jnp.mean((logits > 0).astype(jnp.float32) == labels)


def check_stateless(tx: optax.GradientTransformation) -> None:
    """Refuse an optimizer whose state has param-shaped arrays (momentum, Adam moments): its
    state for one abstract [2] parameter must hold scalars only (no compute, no device)."""
    probe = {"w": jax.ShapeDtypeStruct((2,), jnp.float32)}
    if any(x.shape != () for x in jax.tree.leaves(jax.eval_shape(tx.init, probe))):
        raise ValueError(
            "dlrm: the row-sparse embedding update (optimizer.sparse_embedding_update) equals "
            "the dense one only for plain SGD; this optimizer keeps per-parameter state. Set "
            "--config.optimizer.sparse_embedding_update=false.")


def make_update(model, tx: optax.GradientTransformation, learning_rate: Callable,
                num_tables: int) -> Callable:
    """The `Workload.train_update_fn` of DLRM: (params, opt_state, model_state, batch, rng,
    step) -> (params, opt_state, model_state, metrics)."""
    names = [TABLE.format(t) for t in range(num_tables)]

    def update(params, opt_state, model_state, batch, rng, step):
        del rng  # DLRM draws no randomness in training
        tables = {n: params[n] for n in names}
        mlps = {k: v for k, v in params.items() if k not in tables}
        ids = batch["sparse"]
        rows = tuple(jnp.take(tables[n], ids[:, t], axis=0, mode="clip")
                     for t, n in enumerate(names))

        def loss_fn(mlps, rows):
            logits = model.apply({"params": {**mlps, **tables}}, batch["dense"], ids,
                                 train=True, gathered=rows)
            return click_loss(logits, batch["label"])

        (loss, accuracy), (g_mlps, g_rows) = jax.value_and_grad(
            loss_fn, argnums=(0, 1), has_aux=True)(mlps, rows)
        updates, opt_state = tx.update(g_mlps, opt_state, mlps)
        mlps = optax.apply_updates(mlps, updates)
        lr = learning_rate(step)
        new_tables = {
            n: tables[n].at[ids[:, t]].add((-lr * g_rows[t]).astype(tables[n].dtype),
                                           mode="clip")
            for t, n in enumerate(names)}
        metrics = {"loss": loss, "accuracy": accuracy}
        return {**mlps, **new_tables}, opt_state, model_state, metrics

    return update
