"""Mask R-CNN's FPN anchors and RoI level assignment, as the MLPerf v0.7 reference makes them.

Source: mlcommons/training object_detection/pytorch/maskrcnn_benchmark (v0.7):
- modeling/rpn/anchor_generator.py `generate_anchors` (Detectron's): a base box
  [0, 0, stride - 1, stride - 1]; for each aspect ratio r (h / w) the box of the same area
  size = stride^2 with w = round(sqrt(size / r)), h = round(w * r), then scaled by
  anchor_size / stride, centred on the base box; `grid_anchors` adds shifts (x * stride,
  y * stride) over the feature map, order (row, column, anchor), one anchor size per level
  (`ANCHOR_SIZES` (32, 64, 128, 256, 512), `ANCHOR_STRIDE` (4, 8, 16, 32, 64),
  `ASPECT_RATIOS` (0.5, 1.0, 2.0): config/defaults.py and configs/e2e_mask_rcnn_R_50_FPN_1x.yaml).
- modeling/poolers.py `LevelMapper`: level = floor(4 + log2(sqrt(area) / 224 + 1e-6)), clamped to
  [2, 5].

Coordinates: the reference's boxes are inclusive pixel boxes (x2 = x1 + w - 1, "TO_REMOVE = 1"
everywhere). This suite stores them EXCLUSIVE (x2 = x1 + w): adding 1 to x2 and y2 once here
makes `tpubench.detection.boxes.iou` and a plain box coder exactly the reference's +1
arithmetic (areas (x2 - x1 + 1) (y2 - y1 + 1) and widths x2 - x1 + 1 become x2' - x1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np


def cell_anchors(stride: int, size: float, aspect_ratios: Sequence[float]) -> np.ndarray:
    """[len(aspect_ratios), 4] exclusive ltrb anchors of one cell at the origin
    (`generate_anchors(stride, (size,), aspect_ratios)` + 1 on x2, y2)."""
    w = h = float(stride)
    cx, cy = 0.5 * (w - 1), 0.5 * (h - 1)
    out = []
    for r in aspect_ratios:
        ws = np.round(np.sqrt(w * h / r))
        hs = np.round(ws * r)
        ws, hs = ws * size / stride, hs * size / stride
        out.append([cx - 0.5 * (ws - 1), cy - 0.5 * (hs - 1), cx + 0.5 * (ws - 1) + 1,
                    cy + 0.5 * (hs - 1) + 1])
    return np.asarray(out, np.float64)


def level_anchors(feature_size: tuple[int, int], stride: int, size: float,
                  aspect_ratios: Sequence[float]) -> np.ndarray:
    """[H * W * A, 4] float32 anchors of one level, order (row, column, anchor)."""
    fh, fw = feature_size
    ys, xs = np.meshgrid(np.arange(fh) * stride, np.arange(fw) * stride, indexing="ij")
    shifts = np.stack([xs, ys, xs, ys], -1).reshape(-1, 1, 4).astype(np.float64)
    return (shifts + cell_anchors(stride, size, aspect_ratios)[None]).reshape(-1, 4).astype(
        np.float32)


def fpn_anchors(image_size: tuple[int, int], strides: Sequence[int], sizes: Sequence[float],
                aspect_ratios: Sequence[float]) -> list[np.ndarray]:
    """One [H_l * W_l * A, 4] array per level for a padded input of `image_size` (h, w); the
    level-l map is ceil(size / stride_l) (a stride-2 conv chain over a size divisible by 32)."""
    if len(strides) != len(sizes):
        raise ValueError("fpn_anchors: one anchor size per stride")
    return [level_anchors((math.ceil(image_size[0] / s), math.ceil(image_size[1] / s)), s, z,
                          aspect_ratios) for s, z in zip(strides, sizes, strict=True)]


def roi_levels(boxes, k_min: int = 2, k_max: int = 5, canonical_scale: float = 224.0,
               canonical_level: int = 4, eps: float = 1e-6):
    """poolers.py `LevelMapper` on exclusive ltrb boxes [..., 4] -> int level in [k_min, k_max]."""
    area = (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    s = jnp.sqrt(jnp.maximum(area, 0.0))
    lvl = jnp.floor(canonical_level + jnp.log2(s / canonical_scale + eps))
    return jnp.clip(lvl, k_min, k_max).astype(jnp.int32)
