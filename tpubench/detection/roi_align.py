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
    offset .. offset + height * width, row-major): ONE gather of the four corners of every
    sample (XLA compiles one gather much faster than sixteen)."""
    f = flat.astype(jnp.float32)
    b = boxes.astype(jnp.float32) * scale[:, None]
    size_w = jnp.maximum(b[:, 2] - b[:, 0], 1.0)
    size_h = jnp.maximum(b[:, 3] - b[:, 1], 1.0)
    n, s = output_size, sampling_ratio
    offs = (jnp.arange(n)[:, None] + (jnp.arange(s)[None, :] + 0.5) / s).reshape(-1)  # [n*s]
    ys = b[:, 1, None] + offs[None] * (size_h / n)[:, None]  # [R, n*s]
    xs = b[:, 0, None] + offs[None] * (size_w / n)[:, None]
    h = height.astype(jnp.float32)[:, None]
    w = width.astype(jnp.float32)[:, None]
    # Per axis (separable): outside flag, the two taps and their weights.
    def taps(v, size):
        out = (v < -1.0) | (v > size)
        v = jnp.maximum(v, 0.0)
        lo = jnp.floor(v)
        last = lo >= size - 1
        lo = jnp.where(last, size - 1, lo)
        hi = jnp.where(last, size - 1, lo + 1)
        frac = jnp.where(last, 0.0, v - lo)
        return out, lo.astype(jnp.int32), hi.astype(jnp.int32), frac

    oy, y0, y1, ly = taps(ys, h)
    ox, x0, x1, lx = taps(xs, w)
    wi = width.astype(jnp.int32)[:, None, None]
    base = offset.astype(jnp.int32)[:, None, None]
    rows = jnp.stack([y0, y0, y1, y1], 0)[:, :, :, None]  # [4, R, n*s, 1]
    cols = jnp.stack([x0, x1, x0, x1], 0)[:, :, None, :]  # [4, R, 1, n*s]
    index = base[None] + rows * wi[None] + cols  # [4, R, n*s, n*s]
    wy = jnp.stack([1 - ly, 1 - ly, ly, ly], 0)[:, :, :, None]
    wx = jnp.stack([1 - lx, lx, 1 - lx, lx], 0)[:, :, None, :]
    weight = wy * wx * ~(oy[:, :, None] | ox[:, None, :])[None]
    v = jnp.sum(f[index] * weight[..., None], axis=0)  # [R, n*s, n*s, C]
    r, c = v.shape[0], v.shape[-1]
    return v.reshape(r, n, s, n, s, c).mean(axis=(2, 4))


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
