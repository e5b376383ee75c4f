"""Post-training int8 weight quantization of a served model (`tpubench infer --quantize=int8`).

The MLPerf Inference v0.7 mobile submissions ran int8 models obtained by post-training
quantization (TF Lite's). This is the weight half of that, generic over any params pytree:
every leaf named `kernel` with 2 or more dimensions (flax `Conv`, `Dense`, `DenseGeneral`, the
depthwise shifts' kernel) is stored as int8 with one float32 scale per output channel (its last
axis), symmetric: scale = max |w| over the channel / 127, q = round(w / scale) in [-127, 127],
so every weight is off by at most scale / 2. Everything else (biases, norms, embeddings, batch
statistics) stays float. The served function dequantizes the weights inside the compiled step
(the int8 arrays are what sits in device memory) and computes in float.

Activations (`--calibration_samples=N`, N > 0): the input of every module that owns a quantized
kernel (its `__call__`'s first argument, found with `flax.linen.intercept_methods`) is rounded
to int8 too, per tensor and symmetric: scale = a / 127 with a the calibration statistic of
|input| over the first N TRAINING samples (`InferenceSpec.calibration_inputs`): the max
(`--calibration=max`, default) or a percentile of each calibration batch, averaged over the
batches (`--calibration=percentile:99.99`); values past it clip to +-127. The rounding is
simulated (the int8 grid in float32, then the float matmul: what an int8 x int8 -> int32 kernel
computes up to float rounding), so this measures the quality int8 keeps, not int8 speed. With
N = 0 activations stay float and no calibration set is read. `tpubench infer` reports the
quantized model's quality next to the float model's on the same data (`summary.json`
"quantization").
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from tpubench.errors import UsageError

SCHEMES = ("none", "int8")
QMAX = 127


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Int8Weight:
    """A quantized kernel: int8 values and float32 per-output-channel scales (shape [C])."""

    values: jax.Array
    scale: jax.Array

    def dequantize(self) -> jax.Array:
        """float32 weights: values * scale (broadcast over the last axis)."""
        return self.values.astype(jnp.float32) * self.scale


def check_calibration(method: str, samples: int) -> float | None:
    """None for "max", the percentile for "percentile:P" (0 < P <= 100); `UsageError`
    otherwise or for a negative sample count."""
    if samples < 0:
        raise UsageError(f"--calibration_samples={samples} must be >= 0 (0: float activations).")
    if method == "max":
        return None
    name, _, value = method.partition(":")
    try:
        percentile = float(value)
    except ValueError:
        percentile = -1.0
    if name != "percentile" or not 0 < percentile <= 100:
        raise UsageError(f"Unknown --calibration={method!r}. Choices: max, percentile:P with "
                         "0 < P <= 100 (e.g. percentile:99.99).")
    return percentile


def check_scheme(name: str) -> str:
    """The scheme name, or a `UsageError` that lists the choices."""
    if name not in SCHEMES:
        raise UsageError(f"Unknown --quantize={name!r}. Choices: {', '.join(SCHEMES)} (int8: "
                         "post-training int8 weights, per output channel, activations float).")
    return name


def _is_kernel(path: tuple[Any, ...], leaf: Any) -> bool:
    last = path[-1] if path else None
    name = getattr(last, "key", getattr(last, "name", None))
    return name == "kernel" and getattr(leaf, "ndim", 0) >= 2


def quantize_leaf(w: Any) -> Int8Weight:
    """Symmetric int8 per output channel (last axis) of one float kernel (host, numpy)."""
    w = np.asarray(w, np.float32)
    absmax = np.abs(w).reshape(-1, w.shape[-1]).max(axis=0)
    scale = np.where(absmax > 0, absmax / QMAX, 1.0).astype(np.float32)
    values = np.clip(np.rint(w / scale), -QMAX, QMAX).astype(np.int8)
    return Int8Weight(jnp.asarray(values), jnp.asarray(scale))


def quantize_params(params: Any) -> Any:
    """The params pytree with every kernel (see the module docstring) an `Int8Weight`."""
    return jax.tree_util.tree_map_with_path(
        lambda path, leaf: quantize_leaf(leaf) if _is_kernel(path, leaf) else leaf, params)


def dequantize_params(params: Any) -> Any:
    """Float params back from `quantize_params`'s output (traceable: used inside `apply`)."""
    return jax.tree.map(lambda x: x.dequantize() if isinstance(x, Int8Weight) else x, params,
                        is_leaf=lambda x: isinstance(x, Int8Weight))


def _quantized_input(context: Any) -> bool:
    """True when the intercepted call is a module's `__call__` and the module owns a kernel."""
    if context.method_name != "__call__":
        return False
    module = context.module
    if not module.has_variable("params", "kernel"):
        return False
    return getattr(module.get_variable("params", "kernel"), "ndim", 0) >= 2


def _path(context: Any) -> str:
    return "/".join(str(p) for p in context.module.path)


def calibrate(apply: Any, params: Any, model_state: Any, inputs: Any, batch_size: int,
              percentile: float | None) -> dict[str, float]:
    """Module path -> the |input| statistic of every kernel-owning module over `inputs` (the
    calibration samples, leading axis), run through the float `apply` in batches of
    `batch_size`: the max over all samples, or the `percentile` per batch averaged over
    batches. A module called more than once keeps the largest of its calls."""
    found: dict[str, jax.Array] = {}

    def record(next_fun: Any, args: Any, kwargs: Any, context: Any) -> Any:
        if args and _quantized_input(context):
            a = jnp.abs(jnp.asarray(args[0], jnp.float32))
            stat = jnp.max(a) if percentile is None else jnp.percentile(a, percentile)
            key = _path(context)
            found[key] = stat if key not in found else jnp.maximum(found[key], stat)
        return next_fun(*args, **kwargs)

    def run(p: Any, s: Any, x: Any) -> dict[str, jax.Array]:
        found.clear()
        with nn.intercept_methods(record):
            apply(p, s, x)
        return dict(found)

    step = jax.jit(run)
    count = len(jax.tree.leaves(inputs)[0])
    per_batch = []
    for start in range(0, count, batch_size):
        batch = jax.tree.map(lambda x, s=start: x[s:s + batch_size], inputs)
        per_batch.append(jax.device_get(step(params, model_state, batch)))
    combine = np.max if percentile is None else np.mean
    return {k: float(combine([b[k] for b in per_batch])) for k in per_batch[0]}


def fake_quant_inputs(scales: dict[str, float]) -> Any:
    """A `flax.linen.intercept_methods` interceptor rounding the first argument of each
    calibrated module to int8 (per tensor, symmetric, scale = statistic / 127)."""

    def intercept(next_fun: Any, args: Any, kwargs: Any, context: Any) -> Any:
        key = _path(context) if args and _quantized_input(context) else None
        if key is not None and key in scales and scales[key] > 0:
            x = args[0]
            scale = jnp.float32(scales[key] / QMAX)
            q = jnp.clip(jnp.round(x.astype(jnp.float32) / scale), -QMAX, QMAX) * scale
            args = (q.astype(x.dtype), *args[1:])
        return next_fun(*args, **kwargs)

    return intercept


def stats(params: Any, quantized: Any) -> dict[str, Any]:
    """What quantization did: kernels quantized, bytes before and after, the largest absolute
    weight error and the largest error relative to its channel's scale (<= 0.5 by design)."""
    float_leaves = jax.tree_util.tree_flatten_with_path(params)[0]
    q_by_path = dict(jax.tree_util.tree_flatten_with_path(
        quantized, is_leaf=lambda x: isinstance(x, Int8Weight))[0])
    kernels, bytes_float, bytes_q, max_err, max_rel = 0, 0, 0, 0.0, 0.0
    for path, leaf in float_leaves:
        leaf = np.asarray(leaf)
        bytes_float += leaf.nbytes
        q = q_by_path.get(path)
        if isinstance(q, Int8Weight):
            kernels += 1
            bytes_q += q.values.size + q.scale.size * 4
            err = np.abs(np.asarray(q.dequantize()) - leaf)
            max_err = max(max_err, float(err.max()))
            max_rel = max(max_rel, float((err / np.asarray(q.scale)).max()))
        else:
            bytes_q += leaf.nbytes
    return {"scheme": "int8 weights, symmetric per output channel; activations float",
            "kernels_quantized": kernels, "param_bytes_float": int(bytes_float),
            "param_bytes_quantized": int(bytes_q), "max_abs_weight_error": max_err,
            "max_weight_error_over_scale": max_rel}


def quantized_spec(spec: Any, params: Any, scales: dict[str, float] | None = None
                   ) -> tuple[Any, Any]:
    """(spec serving int8 weights, the quantized params) for float `params`: `apply`
    dequantizes inside the compiled step and, with `scales` (from `calibrate`), rounds each
    calibrated kernel's input to int8; `measure_reference` (the training eval a small
    config's accuracy is judged against) still measures the FLOAT model, so the accuracy check
    is the quantized model's LoadGen accuracy against `quality_fraction` of the float
    model's, side by side in the summary."""
    quantized = quantize_params(params)
    float_reference = spec.measure_reference

    def apply(qparams: Any, model_state: Any, inputs: Any) -> Any:
        if not scales:
            return spec.apply(dequantize_params(qparams), model_state, inputs)
        with nn.intercept_methods(fake_quant_inputs(scales)):
            return spec.apply(dequantize_params(qparams), model_state, inputs)

    measure = None
    if float_reference is not None:
        def measure(_qparams: Any, model_state: Any) -> float:
            return float_reference(params, model_state)
    return dataclasses.replace(spec, apply=apply, measure_reference=measure), quantized
