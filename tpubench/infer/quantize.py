"""Post-training int8 weight quantization of a served model (`tpubench infer --quantize=int8`).

The MLPerf Inference v0.7 mobile submissions ran int8 models obtained by post-training
quantization (TF Lite's). This is the weight half of that, generic over any params pytree:
every leaf named `kernel` with 2 or more dimensions (flax `Conv`, `Dense`, `DenseGeneral`, the
depthwise shifts' kernel) is stored as int8 with one float32 scale per output channel (its last
axis), symmetric: scale = max |w| over the channel / 127, q = round(w / scale) in [-127, 127],
so every weight is off by at most scale / 2. Everything else (biases, norms, embeddings, batch
statistics) stays float. Activations stay float, so no calibration set is needed: the served
function dequantizes the weights inside the compiled step (the int8 arrays are what sits in
device memory) and computes in float. `tpubench infer` reports the quantized model's quality
next to the float model's on the same data (`summary.json` "quantization").
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

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


def quantized_spec(spec: Any, params: Any) -> tuple[Any, Any]:
    """(spec serving int8 weights, the quantized params) for float `params`: `apply`
    dequantizes inside the compiled step; `measure_reference` (the training eval a small
    config's accuracy is judged against) still measures the FLOAT model, so the accuracy check
    is the quantized model's LoadGen accuracy against `quality_fraction` of the float
    model's, side by side in the summary."""
    quantized = quantize_params(params)
    float_reference = spec.measure_reference

    def apply(qparams: Any, model_state: Any, inputs: Any) -> Any:
        return spec.apply(dequantize_params(qparams), model_state, inputs)

    measure = None
    if float_reference is not None:
        def measure(_qparams: Any, model_state: Any) -> float:
            return float_reference(params, model_state)
    return dataclasses.replace(spec, apply=apply, measure_reference=measure), quantized
