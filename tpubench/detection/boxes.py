"""Box arithmetic: format conversion, IoU, and the SSD offset encoding.

The encoding is the MLPerf v0.7 SSD reference's (mlcommons/training
single_stage_detector/ssd/base_model.py `Loss._loc_vec` and utils.py `Encoder.scale_back_batch`,
with `DefaultBoxes(scale_xy=0.1, scale_wh=0.2)`):

    t_xy = (g_xy - d_xy) / d_wh / scale_xy        t_wh = log(g_wh / d_wh) / scale_wh

Every function works on numpy or jax arrays (`xp` is picked from the input) with boxes on the
last axis, so the same code runs in the host pipeline, in tests and under `jax.jit`.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

SCALE_XY = 0.1  # utils.py DefaultBoxes(..., scale_xy=0.1, ...)
SCALE_WH = 0.2  # utils.py DefaultBoxes(..., scale_wh=0.2)

Array = Any


def _xp(x: Array):
    return np if isinstance(x, np.ndarray) else jnp


def ltrb_to_xywh(b: Array) -> Array:
    """(l, t, r, b) -> (cx, cy, w, h) on the last axis."""
    xp = _xp(b)
    return xp.stack([(b[..., 0] + b[..., 2]) / 2, (b[..., 1] + b[..., 3]) / 2,
                     b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]], axis=-1)


def xywh_to_ltrb(b: Array) -> Array:
    """(cx, cy, w, h) -> (l, t, r, b) on the last axis."""
    xp = _xp(b)
    return xp.stack([b[..., 0] - b[..., 2] / 2, b[..., 1] - b[..., 3] / 2,
                     b[..., 0] + b[..., 2] / 2, b[..., 1] + b[..., 3] / 2], axis=-1)


def iou(a: Array, b: Array) -> Array:
    """IoU of every pair: a [..., N, 4] ltrb, b [..., M, 4] ltrb -> [..., N, M].

    As the reference's `calc_iou_tensor` (utils.py): intersection clipped at 0, union = area_a +
    area_b - intersection (no epsilon: degenerate boxes give NaN there too, and never occur in
    its data).
    """
    xp = _xp(a)
    lt = xp.maximum(a[..., :, None, :2], b[..., None, :, :2])
    rb = xp.minimum(a[..., :, None, 2:], b[..., None, :, 2:])
    wh = xp.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    return inter / (area_a[..., :, None] + area_b[..., None, :] - inter)


def encode(boxes_xywh: Array, anchors_xywh: Array, scale_xy: float = SCALE_XY,
           scale_wh: float = SCALE_WH) -> Array:
    """Regression targets of `boxes_xywh` w.r.t. `anchors_xywh` (broadcasting): base_model.py
    `Loss._loc_vec` (which multiplies by 1/scale)."""
    xp = _xp(boxes_xywh)
    txy = (boxes_xywh[..., :2] - anchors_xywh[..., :2]) / anchors_xywh[..., 2:] / scale_xy
    twh = xp.log(boxes_xywh[..., 2:] / anchors_xywh[..., 2:]) / scale_wh
    return xp.concatenate([txy, twh], axis=-1)


def decode(offsets: Array, anchors_xywh: Array, scale_xy: float = SCALE_XY,
           scale_wh: float = SCALE_WH) -> Array:
    """Boxes (xywh) from predicted offsets: utils.py `Encoder.scale_back_batch`."""
    xp = _xp(offsets)
    xy = offsets[..., :2] * scale_xy * anchors_xywh[..., 2:] + anchors_xywh[..., :2]
    wh = xp.exp(offsets[..., 2:] * scale_wh) * anchors_xywh[..., 2:]
    return xp.concatenate([xy, wh], axis=-1)
