"""Faster/Mask R-CNN targets with static shapes: the box coder, the matcher and the balanced
sampler of the MLPerf v0.7 reference.

Source: mlcommons/training object_detection/pytorch/maskrcnn_benchmark/modeling (v0.7):
- box_coder.py `BoxCoder(weights, bbox_xform_clip=log(1000 / 16))`: t_x = w_x (g_cx - p_cx) / p_w,
  t_w = w_w log(g_w / p_w); decode clamps dw, dh at the clip. Its +1 widths are exclusive-box
  widths here (`fpn_anchors`' docstring), so encode / decode are the plain formulas. Weights:
  (1, 1, 1, 1) for the RPN (rpn/rpn.py), (10, 10, 5, 5) for the box head (BBOX_REG_WEIGHTS).
- matcher.py `Matcher(high, low, allow_low_quality_matches)`: each prediction takes its best
  ground truth; IoU < low -> -1 (background), low <= IoU < high -> -2 (ignored); with low-quality
  matches, every prediction that reaches some ground truth's best IoU (ties included) keeps its
  match. RPN: (0.7, 0.3, True); box head: (0.5, 0.5, False).
- balanced_positive_negative_sampler.py: num_pos = min(batch * fraction, positives), num_neg =
  min(batch - num_pos, negatives), each a uniformly random subset (torch.randperm). Here the
  subsets are the lowest ranks of uniform random keys among the candidates: same distribution,
  fixed shapes.

IoU is `tpubench.detection.boxes.iou` on exclusive boxes (the reference's `boxlist_iou`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from tpubench.detection import boxes

BBOX_XFORM_CLIP = math.log(1000.0 / 16)  # box_coder.py
RPN_WEIGHTS = (1.0, 1.0, 1.0, 1.0)  # rpn/rpn.py BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
ROI_WEIGHTS = (10.0, 10.0, 5.0, 5.0)  # config/defaults.py ROI_HEADS.BBOX_REG_WEIGHTS
BELOW_LOW = -1
BETWEEN = -2


def encode(gt: jax.Array, proposals: jax.Array, weights=RPN_WEIGHTS) -> jax.Array:
    """Regression targets of exclusive ltrb `gt` w.r.t. `proposals` (broadcasting) [..., 4]."""
    g, p = boxes.ltrb_to_xywh(gt), boxes.ltrb_to_xywh(proposals)
    wx, wy, ww, wh = weights
    return jnp.stack([wx * (g[..., 0] - p[..., 0]) / p[..., 2],
                      wy * (g[..., 1] - p[..., 1]) / p[..., 3],
                      ww * jnp.log(g[..., 2] / p[..., 2]),
                      wh * jnp.log(g[..., 3] / p[..., 3])], axis=-1)


def decode(codes: jax.Array, proposals: jax.Array, weights=RPN_WEIGHTS,
           clip: float = BBOX_XFORM_CLIP) -> jax.Array:
    """Exclusive ltrb boxes from `codes` [..., 4] on `proposals` [..., 4]."""
    p = boxes.ltrb_to_xywh(proposals.astype(jnp.float32))
    codes = codes.astype(jnp.float32)
    wx, wy, ww, wh = weights
    cx = codes[..., 0] / wx * p[..., 2] + p[..., 0]
    cy = codes[..., 1] / wy * p[..., 3] + p[..., 1]
    w = jnp.exp(jnp.minimum(codes[..., 2] / ww, clip)) * p[..., 2]
    h = jnp.exp(jnp.minimum(codes[..., 3] / wh, clip)) * p[..., 3]
    return boxes.xywh_to_ltrb(jnp.stack([cx, cy, w, h], axis=-1))


def clip_boxes(b: jax.Array, height, width) -> jax.Array:
    """bounding_box.py `clip_to_image(remove_empty=False)`: x in [0, w - 1] inclusive, i.e.
    x1 in [0, w - 1] and exclusive x2 in [1, w]."""
    return jnp.stack([jnp.clip(b[..., 0], 0, width - 1), jnp.clip(b[..., 1], 0, height - 1),
                      jnp.clip(b[..., 2], 1, width), jnp.clip(b[..., 3], 1, height)], axis=-1)


def match(gt: jax.Array, gt_valid: jax.Array, preds: jax.Array, high: float, low: float,
          allow_low_quality: bool) -> tuple[jax.Array, jax.Array]:
    """One image: gt [M, 4], gt_valid [M] bool, preds [N, 4] -> (matches [N] int: ground-truth
    row, or BELOW_LOW / BETWEEN; best IoU [N])."""
    iou = jnp.where(gt_valid[:, None], boxes.iou(gt.astype(jnp.float32),
                                                 preds.astype(jnp.float32)), -1.0)
    best = jnp.max(iou, axis=0)
    all_matches = jnp.argmax(iou, axis=0).astype(jnp.int32)
    matches = jnp.where(best < low, BELOW_LOW, jnp.where(best < high, BETWEEN, all_matches))
    if allow_low_quality:
        highest = jnp.max(iou, axis=1)  # per ground truth
        hit = jnp.any(gt_valid[:, None] & (iou == highest[:, None]) & (highest[:, None] > 0),
                      axis=0)
        matches = jnp.where(hit, all_matches, matches)
    return matches, best


def sample(rng: jax.Array, positive: jax.Array, negative: jax.Array, batch: int,
           fraction: float) -> tuple[jax.Array, jax.Array]:
    """Balanced sampling of one image's candidates [N] bool -> (sampled positive [N] bool,
    sampled negative [N] bool)."""
    k1, k2 = jax.random.split(rng)
    num_pos = jnp.minimum(int(batch * fraction), jnp.sum(positive))
    num_neg = jnp.minimum(batch - num_pos, jnp.sum(negative))

    def lowest(key, candidates, count):
        keys = jnp.where(candidates, jax.random.uniform(key, candidates.shape), 2.0)
        rank = jnp.argsort(jnp.argsort(keys))
        return candidates & (rank < count)

    return lowest(k1, positive, num_pos), lowest(k2, negative, num_neg)


def sampled_indices(pos: jax.Array, neg: jax.Array, count: int) -> tuple[jax.Array, jax.Array]:
    """[count] indices of the sampled candidates, positives first, and their validity (fewer
    sampled than `count` pads with invalid slots)."""
    priority = 2 * pos.astype(jnp.int32) + neg.astype(jnp.int32)
    order = jnp.argsort(-priority, stable=True)[:count]
    return order, priority[order] > 0
