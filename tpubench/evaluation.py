"""The one eval path, shared by training (`tpubench.loops.supervised`) and inference
(`tpubench.infer`).

    Workload.eval_step(params, model_state, batch) -> EvalOutput       per-example values, on device
    masked(output, batch["mask"])                  -> BatchEval        the harness applies the mask
    (engines: psum the sums over pmap devices, all-gather per-example rows over processes)
    accumulate([BatchEval on the host, ...])       -> EvalResults      sums added, padding dropped
    Workload.eval_finalize(EvalResults)            -> quality (accuracy, BLEU, AUC)

A workload never sees the eval mask: every value it returns is PER EXAMPLE (leading dimension =
the batch), and the harness weights `sums` by the mask and drops the padding rows of
`per_example`, so a workload cannot forget the mask and padding cannot change the quality.
`quality(workload, outputs)` is the single function that both a training run's eval and
`infer.spec.training_eval_quality` call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np

Batch = dict[str, Any]
PyTree = Any


@flax.struct.dataclass
class EvalOutput:
    """What `Workload.eval_step` returns for one eval batch of B examples (a pytree).

    Fields (every array has leading dimension B, one row per example, padding rows included):
      sums: statistics the harness adds up over the eval set, e.g. {"correct": [B] 0/1,
        "masked_lm_correct": [B, predictions] weighted}. The harness multiplies each row by
        the example's mask and sums over every axis, on device, so only scalars cross to the
        host. Do NOT reduce over the batch yourself: a scalar is rejected at trace time.
      per_example: outputs the host needs row by row (decoded token ids for BLEU, scores and
        labels for AUC). The harness gathers them over batches, devices and processes and
        keeps only the real rows, in eval-batch order. Prefer sums: these cross device->host.
    """

    sums: dict[str, jax.Array] = flax.struct.field(default_factory=dict)
    per_example: dict[str, jax.Array] = flax.struct.field(default_factory=dict)


@flax.struct.dataclass
class BatchEval:
    """One eval batch after the harness applied the mask (the compiled eval step's output).

    Fields:
      sums: scalars, sum over the batch of value * mask (float32 on device).
      examples: scalar, the number of real examples (sum of the mask).
      per_example: the workload's per-example outputs, padding rows still in.
      mask: [B] float mask, carried only when `per_example` is non-empty (else None).
    """

    sums: dict[str, jax.Array]
    examples: jax.Array
    per_example: dict[str, jax.Array]
    mask: jax.Array | None


@dataclasses.dataclass(frozen=True)
class EvalResults:
    """The whole eval on the host: what `Workload.eval_finalize` receives.

    Fields:
      sums: each `EvalOutput.sums` entry summed over every real example (float64 on the host).
      per_example: each `EvalOutput.per_example` entry, real rows only, in eval-batch order.
      examples: the number of real examples evaluated.
    """

    sums: dict[str, float]
    per_example: dict[str, np.ndarray]
    examples: float


def _check(name: str, value: jax.Array, batch_size: int, kind: str) -> None:
    if jnp.ndim(value) == 0 or jnp.shape(value)[0] != batch_size:
        raise ValueError(
            f"eval_step's {kind}[{name!r}] has shape {jnp.shape(value)}; every eval output must "
            f"be per example, with leading dimension the batch ({batch_size}). Return the "
            "unreduced values: the harness applies the mask and sums "
            "(tpubench/evaluation.py)."
        )


def masked(output: EvalOutput, mask: jax.Array) -> BatchEval:
    """Apply the eval mask to one batch's `EvalOutput` (pure; runs inside the eval step)."""
    if not isinstance(output, EvalOutput):
        raise TypeError(
            "eval_step must return tpubench.evaluation.EvalOutput, not "
            f"{type(output).__name__}."
        )
    mask = jnp.asarray(mask, jnp.float32)
    b = mask.shape[0]
    sums = {}
    for name, value in output.sums.items():
        _check(name, value, b, "sums")
        value = jnp.asarray(value, jnp.float32)
        sums[name] = jnp.sum(value * mask.reshape((b,) + (1,) * (value.ndim - 1)))
    for name, value in output.per_example.items():
        _check(name, value, b, "per_example")
    return BatchEval(sums=sums, examples=jnp.sum(mask), per_example=dict(output.per_example),
                     mask=mask if output.per_example else None)


def eval_fn(workload: Any) -> Callable[[PyTree, PyTree, Batch], BatchEval]:
    """`(params, model_state, batch) -> BatchEval`: the workload's eval step, masked."""

    def evaluate(params: PyTree, model_state: PyTree, batch: Batch) -> BatchEval:
        return masked(workload.eval_step(params, model_state, batch), batch["mask"])

    return evaluate


def accumulate(outputs: Sequence[BatchEval]) -> EvalResults:
    """Host side: the `BatchEval`s of every batch (numpy, already gathered over devices and
    processes) -> sums added in float64, per-example rows concatenated without the padding."""
    if not outputs:
        raise ValueError("accumulate: no eval batches.")
    sums = {k: float(np.sum([np.float64(o.sums[k]) for o in outputs])) for k in outputs[0].sums}
    examples = float(np.sum([np.float64(o.examples) for o in outputs]))
    per_example: dict[str, np.ndarray] = {}
    if outputs[0].per_example:
        keep = np.concatenate([np.asarray(o.mask) for o in outputs]) > 0
        for k in outputs[0].per_example:
            rows = np.concatenate([np.asarray(o.per_example[k]) for o in outputs])
            per_example[k] = rows[keep]
    return EvalResults(sums=sums, per_example=per_example, examples=examples)


def quality(workload: Any, outputs: Sequence[BatchEval]) -> float | dict[str, float]:
    """The quality of a whole eval: `eval_finalize(accumulate(outputs))` (host side): a float,
    or a dict of floats for a several-metric target (Mask R-CNN's {"BBOX", "SEGM"})."""
    q = workload.eval_finalize(accumulate(outputs))
    if isinstance(q, Mapping):
        return {str(k): float(v) for k, v in q.items()}
    return float(q)
