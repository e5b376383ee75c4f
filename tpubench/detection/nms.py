"""Detection post-processing on device with static shapes: decode, per-class NMS, top detections
(SSD's `detect`; `select` is the class-wise part Mask R-CNN's box head shares).

Source: mlcommons/training single_stage_detector/ssd/utils.py `Encoder.decode_batch` /
`decode_single` and train.py `coco_eval` (v0.7): softmax scores; for each foreground class,
the boxes scoring above 0.05 (`nms_valid_thresh`), at most the 200 best (`max_num`), greedy NMS
that drops every box with IoU >= 0.5 (`overlap_threshold`; the reference keeps `iou < criteria`)
with a kept one; then the 200 best detections over all classes (`nms_max_detections`).

Static shapes: each class takes its top K = min(200, A) candidates with `lax.top_k` (scores at
or below the threshold masked out), greedy NMS runs as a `fori_loop` over those K, and the
final top D merges all classes. Outputs are padded: label 0 and score 0 mark empty slots.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from tpubench.detection import boxes

SCORE_THRESHOLD = 0.05  # train.py --nms-valid-thresh default
IOU_THRESHOLD = 0.5  # train.py coco_eval: overlap_threshold = 0.50
MAX_PER_CLASS = 200  # utils.py decode_single(max_num=200)
MAX_DETECTIONS = 200  # train.py coco_eval: nms_max_detections = 200


def nms_mask(sorted_boxes: jax.Array, valid: jax.Array, iou_threshold: float) -> jax.Array:
    """Greedy NMS over boxes already sorted by descending score: [K, 4] ltrb, [K] bool ->
    [K] bool kept. Box i is kept when valid and no kept box before it has IoU >= threshold.

    The loop carries two [K] bool rows (kept, suppressed), not the [K, K] IoU matrix: step i
    computes box i's IoU row itself and, when i is kept, suppresses the boxes it overlaps
    (Mask R-CNN's RPN runs this on 2,000 boxes of 16 images per level: the matrix was 256 MB)."""
    k = sorted_boxes.shape[0]

    def body(i, carry):
        keep, suppressed = carry
        kept = valid[i] & ~suppressed[i]
        row = boxes.iou(jax.lax.dynamic_slice_in_dim(sorted_boxes, i, 1), sorted_boxes)[0]
        # Marks box i and earlier ones too: harmless, their keep is already decided.
        suppressed = suppressed | (kept & (row >= iou_threshold))
        return keep.at[i].set(kept), suppressed

    keep, _ = jax.lax.fori_loop(0, k, body, (jnp.zeros((k,), bool), jnp.zeros((k,), bool)))
    return keep


def detect(pred_offsets: jax.Array, pred_logits: jax.Array, anchors_xywh: jax.Array,
           score_threshold: float = SCORE_THRESHOLD, iou_threshold: float = IOU_THRESHOLD,
           max_per_class: int = MAX_PER_CLASS, max_detections: int = MAX_DETECTIONS,
           ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One image: offsets [A, 4], logits [A, C] (class 0 = background) -> (boxes [D, 4] ltrb,
    scores [D], labels [D] int; empty slots have score 0 and label 0), best first."""
    ltrb = boxes.xywh_to_ltrb(boxes.decode(pred_offsets.astype(jnp.float32), anchors_xywh))
    probs = jax.nn.softmax(pred_logits.astype(jnp.float32), axis=-1)
    return select(ltrb, probs, score_threshold, iou_threshold, max_per_class, max_detections)


def select(ltrb: jax.Array, probs: jax.Array, score_threshold: float, iou_threshold: float,
           max_per_class: int, max_detections: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Per-class NMS and the top detections of one image: candidate boxes ltrb [A, 4] (shared by
    every class, SSD) or [A, C, 4] (one per class, Mask R-CNN's box head), probs [A, C] (class 0
    = background) -> (boxes [D, 4], scores [D], labels [D]; empty slots score 0, label 0)."""
    num_anchors, num_classes = probs.shape
    k = min(max_per_class, num_anchors)
    per_class_boxes = ltrb.ndim == 3

    def per_class(scores, class_boxes):
        masked = jnp.where(scores > score_threshold, scores, -1.0)
        top, index = jax.lax.top_k(masked, k)
        cand = class_boxes[index]
        keep = nms_mask(cand, top > score_threshold, iou_threshold)
        return jnp.where(keep, top, -1.0), cand

    if per_class_boxes:
        scores, cands = jax.vmap(per_class, in_axes=(1, 1))(probs[:, 1:], ltrb[:, 1:])
    else:
        scores, cands = jax.vmap(per_class, in_axes=(1, None))(probs[:, 1:], ltrb)
    labels = jnp.broadcast_to(jnp.arange(1, num_classes, dtype=jnp.int32)[:, None], scores.shape)
    d = min(max_detections, scores.size)
    best, index = jax.lax.top_k(scores.reshape(-1), d)
    ok = best > 0
    out_boxes = jnp.where(ok[:, None], cands.reshape(-1, 4)[index], 0.0)
    out_labels = jnp.where(ok, labels.reshape(-1)[index], 0)
    out_scores = jnp.where(ok, best, 0.0)
    if d < max_detections:
        pad = max_detections - d
        out_boxes = jnp.pad(out_boxes, ((0, pad), (0, 0)))
        out_scores = jnp.pad(out_scores, (0, pad))
        out_labels = jnp.pad(out_labels, (0, pad))
    return out_boxes, out_scores, out_labels


def detect_batch(pred_offsets: jax.Array, pred_logits: jax.Array, anchors_xywh: jax.Array,
                 **kwargs) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`detect` over a batch: [B, A, 4], [B, A, C] -> [B, D, 4], [B, D], [B, D]."""
    fn = functools.partial(detect, anchors_xywh=anchors_xywh, **kwargs)
    return jax.vmap(lambda o, lg: fn(o, lg))(pred_offsets, pred_logits)
