"""The pure step functions every workload shares: train state, one train step, a dispatch of K
steps under `lax.scan` (one host call; its metrics summarised on device), and the eval step. No
mesh, no host: `tpubench.loops.engine` compiles them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from jax import lax

from tpubench import evaluation
from tpubench.workload import Batch, Workload


@flax.struct.dataclass
class TrainState:
    """Everything a step changes. `rng` is the run's base key; step keys are fold_in(rng, step),
    so a resumed run draws exactly the randomness an uninterrupted one would."""

    step: jax.Array
    params: Any
    opt_state: Any
    model_state: Any
    rng: jax.Array


def boxed_init_fn(workload: Workload) -> Callable[[jax.Array], TrainState]:
    """rng -> TrainState whose params/opt_state may still hold `nn.Partitioned` boxes."""
    tx = workload.optimizer()

    def init(rng: jax.Array) -> TrainState:
        params, model_state = workload.init(rng)
        return TrainState(
            step=jnp.zeros([], jnp.int32),
            params=params,
            opt_state=tx.init(params),
            model_state=model_state,
            rng=rng,
        )

    return init


def abstract_state(workload: Workload) -> TrainState:
    """The unboxed ShapeDtypeStruct tree of the train state (no compute)."""
    boxed = jax.eval_shape(boxed_init_fn(workload), jax.random.PRNGKey(0))
    return nn.meta.unbox(boxed)


def param_count(workload: Workload) -> int:
    """Number of trainable parameters, from shapes alone."""
    return sum(x.size for x in jax.tree.leaves(abstract_state(workload).params))


def make_train_step(
    workload: Workload, grad_reduce: Callable[[Any], Any] | None = None
) -> Callable[[TrainState, Batch], tuple[TrainState, dict[str, jax.Array]]]:
    """One optimizer step on one global batch. `grad_reduce` (pmap path) averages gradients,
    metrics and model state across devices; under jit, XLA inserts the collectives itself."""
    tx = workload.optimizer()
    custom = workload.train_update_fn() if grad_reduce is None else None

    def train_step(state: TrainState, batch: Batch) -> tuple[TrainState, dict[str, jax.Array]]:
        rng = jax.random.fold_in(state.rng, state.step)
        if custom is not None:  # the workload's own update (Workload.train_update_fn)
            params, opt_state, model_state, metrics = custom(
                state.params, state.opt_state, state.model_state, batch, rng, state.step)
            return state.replace(step=state.step + 1, params=params, opt_state=opt_state,
                                 model_state=model_state), metrics

        def loss_fn(params):
            return workload.loss(params, state.model_state, batch, rng)

        (loss, (model_state, metrics)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            state.params
        )
        metrics = dict(metrics, loss=loss)
        if grad_reduce is not None:
            grads, metrics, model_state = grad_reduce((grads, metrics, model_state))
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        new_state = state.replace(
            step=state.step + 1, params=params, opt_state=opt_state, model_state=model_state
        )
        return new_state, metrics

    return train_step


def _dispatch_metrics(metrics: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """A dispatch's metrics: means over its K steps, the last loss, whether every loss was
    finite."""
    out = {k: jnp.mean(v) for k, v in metrics.items()}
    out["last_loss"] = metrics["loss"][-1]
    out["finite"] = jnp.all(jnp.isfinite(metrics["loss"]))
    return out


def _scan(body: Callable, state: TrainState, xs: Any, length: int, unroll: int | bool):
    """`lax.scan`, except that one step is a plain call: XLA:CPU runs even a one-trip while
    loop several times slower than straight-line code (measured: benchmarks/README)."""
    if length == 1:
        x = None if xs is None else jax.tree.map(lambda v: v[0], xs)
        state, metrics = body(state, x)
        return state, jax.tree.map(lambda v: v[None], metrics)
    return lax.scan(body, state, xs, length=length, unroll=unroll)


def make_dispatch(
    train_step: Callable, unroll: int | bool = 1
) -> Callable[[TrainState, Batch], tuple[TrainState, dict]]:
    """K steps over host batches stacked as [K, B, ...]: one dispatch, no host round trip.

    `unroll` is `lax.scan`'s: 1 keeps a rolled loop (cheap to compile; right on TPU/GPU).
    """

    def dispatch(state: TrainState, batches: Batch) -> tuple[TrainState, dict]:
        k = jax.tree.leaves(batches)[0].shape[0]
        state, metrics = _scan(train_step, state, batches, k, unroll)
        return state, _dispatch_metrics(metrics)

    return dispatch


def make_synthetic_dispatch(
    train_step: Callable,
    workload: Workload,
    steps: int,
    batch_size: int,
    constrain: Callable[[Batch], Batch] = lambda b: b,
    unroll: int | bool = 1,
) -> Callable[[TrainState], tuple[TrainState, dict]]:
    """K steps on batches generated on device (measures the chip, not the input pipeline)."""
    seed = workload.config.run.seed + 1

    def dispatch(state: TrainState) -> tuple[TrainState, dict]:
        # The key is made while tracing, not eagerly: an eager op would run on the mesh's
        # devices, which are compile-only for `tpubench fit`.
        data_key = jax.random.PRNGKey(seed)

        def body(state, _):
            batch = workload.synthetic_batch(jax.random.fold_in(data_key, state.step), batch_size)
            return train_step(state, constrain(batch))

        state, metrics = _scan(body, state, None, steps, unroll)
        return state, _dispatch_metrics(metrics)

    return dispatch


def make_eval_step(workload: Workload) -> Callable[[TrainState, Batch], evaluation.BatchEval]:
    """The workload's eval step on the state, with the mask applied by the harness
    (`tpubench.evaluation.masked`): masked scalar sums plus the per-example outputs."""
    evaluate = evaluation.eval_fn(workload)

    def eval_step(state: TrainState, batch: Batch) -> evaluation.BatchEval:
        return evaluate(state.params, state.model_state, batch)

    return eval_step
