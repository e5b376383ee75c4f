"""RoIAlign with static shapes (jit-able), the reference's kernel, and the FPN multi-level pooler.

Source: mlcommons/training object_detection/pytorch/maskrcnn_benchmark/csrc/cpu/ROIAlign_cpu.cpp
(v0.7, `aligned` does not exist yet): for a box (x1, y1, x2, y2) at `spatial_scale`,
start = x1 * scale, end = x2 * scale, size = max(end - start, 1), bin = size / out; each bin
averages sampling_ratio^2 bilinear samples at start + bin * (p + (i + 0.5) / sampling_ratio);
a sample with y < -1 or y > height (same for x) is 0; otherwise y is clamped at 0 and, when its
floor is at or past height - 1, taken at the last row.

The reference's boxes here are its INCLUSIVE pixel boxes (`fpn_anchors`' module docstring):
callers with exclusive boxes pass x2 - 1, y2 - 1 (`pool_fpn` does).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _align_flat(flat: jax.Array, offset: jax.Array, height: jax.Array, width: jax.Array,
                boxes: jax.Array, scale: jax.Array, output_size: int, sampling_ratio: int,
                ) -> jax.Array:
    """The kernel on features flattened to [N, C], each box [R] reading its own map (rows
    offset .. offset + height * width, row-major).

    Separable: bilinear sampling is a product of a row and a column interpolation, so per box
    the taps of its n * s sample rows (two each) and n * s sample columns index ONE gather of a
    [2ns, 2ns] grid of feature rows (as many elements as the four corners of every sample), and
    two [n, 2ns] matrices (tap weights, zero outside the map, the 1 / s mean of each bin) contract
    it: out = Wy G Wx^T. No [4, R, ns, ns, C] weight product, and the gradient is two small
    contractions and one scatter-add (the full config's fit compiles in minutes, not hours:
    workloads/maskrcnn/configs/full.py)."""
    f = flat.astype(jnp.float32)
    b = boxes.astype(jnp.float32) * scale[:, None]
    size_w = jnp.maximum(b[:, 2] - b[:, 0], 1.0)
    size_h = jnp.maximum(b[:, 3] - b[:, 1], 1.0)
    n, s = output_size, sampling_ratio
    r = b.shape[0]
    offs = (jnp.arange(n)[:, None] + (jnp.arange(s)[None, :] + 0.5) / s).reshape(-1)  # [n*s]
    ys = b[:, 1, None] + offs[None] * (size_h / n)[:, None]  # [R, n*s]
    xs = b[:, 0, None] + offs[None] * (size_w / n)[:, None]
    h = height.astype(jnp.float32)[:, None]
    w = width.astype(jnp.float32)[:, None]

    def taps(v, size):
        """One axis: the two taps of each sample [R, 2ns] (lo, hi interleaved) and the [R, n,
        2ns] matrix that interpolates them and averages each bin's s samples."""
        out = (v < -1.0) | (v > size)
        v = jnp.maximum(v, 0.0)
        lo = jnp.floor(v)
        last = lo >= size - 1
        lo = jnp.where(last, size - 1, lo)
        hi = jnp.where(last, size - 1, lo + 1)
        frac = jnp.where(last, 0.0, v - lo)
        index = jnp.stack([lo, hi], -1).astype(jnp.int32).reshape(r, 2 * n * s)
        weight = jnp.stack([1 - frac, frac], -1) * ~out[..., None]  # [R, ns, 2]
        bins = jnp.eye(n, dtype=jnp.float32)[None, :, :, None]  # sample bin == output bin
        matrix = (weight.reshape(r, 1, n, 2 * s) * bins).reshape(r, n, 2 * n * s) / s
        return index, matrix

    iy, wy = taps(ys, h)
    ix, wx = taps(xs, w)
    base = offset.astype(jnp.int32)[:, None, None]
    index = base + iy[:, :, None] * width.astype(jnp.int32)[:, None, None] + ix[:, None, :]
    grid = f[index]  # [R, 2ns, 2ns, C]
    hi = jax.lax.Precision.HIGHEST  # float32 as the four-corner sum (TPU's default is bf16)
    rows = jnp.einsum("ria,rabc->ribc", wy, grid, precision=hi)
    return jnp.einsum("rjb,ribc->rijc", wx, rows, precision=hi)


def roi_align(feature: jax.Array, boxes: jax.Array, output_size: int, spatial_scale: float,
              sampling_ratio: int) -> jax.Array:
    """One image: feature [H, W, C], boxes [R, 4] (x1, y1, x2, y2) in input pixels as the
    reference's kernel reads them -> [R, out, out, C] float32."""
    h, w, c = feature.shape
    r = boxes.shape[0]
    full = lambda v: jnp.full((r,), v)  # noqa: E731
    return _align_flat(feature.reshape(h * w, c), full(0), full(h), full(w), boxes,
                       full(spatial_scale), output_size, sampling_ratio)


def pool_fpn(features: list[jax.Array], boxes: jax.Array, output_size: int,
             scales: tuple[float, ...], sampling_ratio: int, levels: jax.Array) -> jax.Array:
    """poolers.py `Pooler` for one image: features [H_l, W_l, C] for levels 2..; boxes [R, 4]
    exclusive ltrb; levels [R] (fpn_anchors.roi_levels) -> [R, out, out, C]. The maps are
    flattened into one array and each box reads its level's rows (static shapes)."""
    inclusive = jnp.concatenate([boxes[:, :2], boxes[:, 2:] - 1.0], axis=-1)
    c = features[0].shape[-1]
    sizes = [(f.shape[0], f.shape[1]) for f in features]
    starts, total = [], 0
    for h, w in sizes:
        starts.append(total)
        total += h * w
    flat = jnp.concatenate([f.reshape(-1, c) for f in features])
    i = levels - 2
    pick = lambda vals: jnp.asarray(vals)[i]  # noqa: E731
    return _align_flat(flat, pick(starts), pick([h for h, _ in sizes]),
                       pick([w for _, w in sizes]), inclusive,
                       pick(list(scales)).astype(jnp.float32), output_size, sampling_ratio)
