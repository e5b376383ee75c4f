"""The SSD training loss: smooth-L1 on positive boxes + softmax cross-entropy with 3:1 hard
negative mining, normalised per image by its positive count.

Source: mlcommons/training single_stage_detector/ssd/base_model.py `Loss.forward` (v0.7):
  sl1   = sum over positives of SmoothL1(beta=1)(pred offsets - encoded ground truth), 4 coords
  con   = cross-entropy of every default box; negatives ranked by con (positives set to 0), the
          top min(3 * positives, A) of that ranking are the mined negatives
  loss  = mean over images of (sl1 + con over positives and mined negatives) / positives,
          images without positives contributing 0 (num_mask).
The ranking uses a double argsort as the reference's `sort` + `sort` does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from tpubench.detection import boxes

NEG_POS_RATIO = 3  # base_model.py: neg_num = clamp(3 * pos_num, max=num_boxes)


def smooth_l1(x: jax.Array, beta: float = 1.0) -> jax.Array:
    """torch.nn.SmoothL1Loss(reduce=False) with beta 1: 0.5 x^2 if |x| < 1 else |x| - 0.5;
    other betas as maskrcnn_benchmark/layers/smooth_l1_loss.py: 0.5 x^2 / beta if |x| < beta
    else |x| - 0.5 beta (the Mask R-CNN RPN uses 1/9)."""
    a = jnp.abs(x)
    return jnp.where(a < beta, 0.5 * x * x / beta, a - 0.5 * beta)


def ssd_loss(pred_offsets: jax.Array, pred_logits: jax.Array, gt_xywh: jax.Array,
             gt_labels: jax.Array, anchors_xywh: jax.Array,
             neg_pos_ratio: int = NEG_POS_RATIO) -> tuple[jax.Array, dict[str, jax.Array]]:
    """pred_offsets [B, A, 4], pred_logits [B, A, C], matched gt_xywh [B, A, 4] and gt_labels
    [B, A] (`matching.match_batch`), anchors [A, 4] xywh -> (scalar loss, metrics)."""
    pred_offsets = pred_offsets.astype(jnp.float32)
    pred_logits = pred_logits.astype(jnp.float32)
    num_anchors = gt_labels.shape[1]
    mask = gt_labels > 0
    maskf = mask.astype(jnp.float32)
    pos_num = jnp.sum(mask, axis=1)
    target = boxes.encode(gt_xywh, anchors_xywh[None])
    sl1 = jnp.sum(maskf * jnp.sum(smooth_l1(pred_offsets - target), axis=-1), axis=1)
    con = optax.softmax_cross_entropy_with_integer_labels(pred_logits, gt_labels)
    con_neg = jnp.where(mask, 0.0, con)
    order = jnp.argsort(-jax.lax.stop_gradient(con_neg), axis=1)  # descending
    rank = jnp.argsort(order, axis=1)
    neg_num = jnp.minimum(neg_pos_ratio * pos_num, num_anchors)[:, None]
    neg_mask = (rank < neg_num).astype(jnp.float32)
    closs = jnp.sum(con * (maskf + neg_mask), axis=1)
    num_mask = (pos_num > 0).astype(jnp.float32)
    denom = jnp.maximum(pos_num.astype(jnp.float32), 1e-6)
    loss = jnp.mean((sl1 + closs) * num_mask / denom)
    metrics = {
        "box_loss": jnp.mean(sl1 * num_mask / denom),
        "class_loss": jnp.mean(closs * num_mask / denom),
        "positives": jnp.mean(pos_num.astype(jnp.float32)),
    }
    return loss, metrics
