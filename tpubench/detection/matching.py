"""Assigning ground truth to default boxes, on device with static shapes.

The MLPerf v0.7 SSD reference's rule (mlcommons/training single_stage_detector/ssd/utils.py
`Encoder.encode`, criteria=0.5): every default box takes the ground-truth box it overlaps most;
each ground truth's best default box is then forced to that ground truth (its IoU set to 2.0,
so it always counts); a default box is positive when its IoU is STRICTLY above 0.5. Positive
boxes get the ground truth's label and box, the others label 0 (background) and their own
default box (whose encoding is 0).

Ground truth arrives padded to a fixed count M: rows with label 0 are padding and never match.
When two ground truths share the same best default box, the later one (higher row) wins, as
the reference's `best_dbox_idx[best_bbox_idx[idx]] = idx` assignment leaves it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from tpubench.detection import boxes

MATCH_IOU = 0.5  # utils.py Encoder.encode(criteria=0.5)


def match(gt_ltrb: jax.Array, gt_labels: jax.Array, anchors_ltrb: jax.Array,
          threshold: float = MATCH_IOU) -> tuple[jax.Array, jax.Array]:
    """One image: gt_ltrb [M, 4], gt_labels [M] int (0 = padding), anchors_ltrb [A, 4] ->
    (matched boxes [A, 4] xywh, labels [A] int). Pure; vmap it over a batch."""
    anchors_ltrb = jnp.asarray(anchors_ltrb, jnp.float32)
    m = gt_ltrb.shape[0]
    valid = gt_labels > 0
    ious = jnp.where(valid[:, None], boxes.iou(gt_ltrb.astype(jnp.float32), anchors_ltrb), -1.0)
    best_gt_iou = jnp.max(ious, axis=0)  # per default box
    best_gt = jnp.argmax(ious, axis=0)
    best_anchor = jnp.argmax(ious, axis=1)  # per ground truth
    rows = jnp.where(valid, jnp.arange(m, dtype=jnp.int32), -1)
    forced = jnp.full(anchors_ltrb.shape[0], -1, jnp.int32).at[best_anchor].max(rows)
    gt_index = jnp.where(forced >= 0, forced, best_gt)
    matched_iou = jnp.where(forced >= 0, 2.0, best_gt_iou)
    positive = matched_iou > threshold
    labels = jnp.where(positive, gt_labels[gt_index], 0).astype(jnp.int32)
    anchors_xywh = boxes.ltrb_to_xywh(anchors_ltrb)
    matched = jnp.where(positive[:, None], boxes.ltrb_to_xywh(gt_ltrb[gt_index]), anchors_xywh)
    return matched, labels


def match_batch(gt_ltrb: jax.Array, gt_labels: jax.Array, anchors_ltrb: jax.Array,
                threshold: float = MATCH_IOU) -> tuple[jax.Array, jax.Array]:
    """`match` over a batch: [B, M, 4], [B, M] -> [B, A, 4] xywh, [B, A]."""
    return jax.vmap(lambda b, lab: match(b, lab, anchors_ltrb, threshold))(gt_ltrb, gt_labels)
