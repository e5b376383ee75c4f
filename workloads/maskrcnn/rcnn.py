"""Mask R-CNN's non-layer parts for one batch, static shapes: RPN targets and loss, proposals,
RoI sampling and box/mask losses, and inference (detections + mask probabilities).

Source: mlcommons/training object_detection/pytorch/maskrcnn_benchmark/modeling (v0.7):
- rpn/loss.py `RPNLossComputation`: anchors matched (0.7, 0.3, low-quality kept), anchors not
  inside the image (`STRADDLE_THRESH = 0`) ignored, 256 sampled per image with half positives;
  objectness binary cross-entropy averaged over every sampled anchor of the batch, box loss
  smooth-L1 (beta 1/9) summed over the positives / the sampled count.
- rpn/inference.py `RPNPostProcessor` (FPN): per image and level the `pre_nms_top_n` best
  anchors (train 2000, test 1000), decoded, clipped, NMS 0.7, the `post_nms_top_n` best kept;
  then the best over all levels (`fpn_post_nms_top_n`). Proposals get no gradient; in training
  the ground-truth boxes are appended (`add_gt_proposals`).
- roi_heads/box_head/loss.py: proposals matched (0.5, 0.5), 512 sampled per image, a quarter
  positive; cross-entropy over the sampled, class-specific smooth-L1 (beta 1) over positives
  / the sampled count; box_head/inference.py: softmax, class-specific decode (10, 10, 5, 5),
  clip, score > 0.05, NMS 0.5 per class, the 100 best (`nms.select`).
- roi_heads/mask_head/loss.py: per positive RoI the 28x28 target of its ground truth
  (`tpubench.detection.masks.targets`), binary cross-entropy on its class's logits, averaged
  over every pixel of every positive; inference: the sigmoid of the detected class's logits.

Static shapes where the reference has dynamic ones: the fixed counts above (a level with fewer
anchors takes all), `sampled_indices` picks exactly 512 RoIs per image (positives first), and the
mask head runs on the first 128 of them (every positive fits: 512 x 0.25). Training takes
`post_nms_top_n` proposals per IMAGE; the reference's `FPN_POST_NMS_TOP_N_TRAIN = 2000` is per
batch of a GPU (2 images), i.e. 1,000 per image at its batch of 16 on 8 GPUs: the full config
uses 1,000.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from tpubench.detection import fpn_anchors, masks, nms, rcnn_targets, roi_align
from tpubench.detection.loss import smooth_l1


@dataclasses.dataclass(frozen=True)
class Settings:
    """The counts and thresholds above (config.model.rpn / .roi and config.eval)."""

    pre_nms: int
    post_nms_level: int
    post_nms: int
    rpn_nms: float = 0.7
    rpn_batch: int = 256
    rpn_fraction: float = 0.5
    roi_batch: int = 512
    roi_fraction: float = 0.25
    box_pool: int = 7
    mask_pool: int = 14
    mask_resolution: int = 28
    sampling_ratio: int = 2
    canonical_scale: float = 224.0
    score_threshold: float = 0.05
    det_nms: float = 0.5
    max_per_class: int = 100
    max_detections: int = 100
    mask_loss_weight: float = 1.0  # the reference's: the plain sum of the five losses

    @property
    def mask_slots(self) -> int:
        return int(self.roi_batch * self.roi_fraction)


def _levels(boxes, s: Settings, num_levels: int):
    return fpn_anchors.roi_levels(boxes, 2, 1 + num_levels, s.canonical_scale)


def _pool(features, boxes, size, s: Settings, strides):
    """features [P2..P5] of ONE image ([H, W, C] each), boxes [R, 4] -> [R, size, size, C]."""
    scales = tuple(1.0 / st for st in strides)
    return roi_align.pool_fpn(features, boxes, size, scales, s.sampling_ratio,
                              _levels(boxes, s, len(features)))


def proposals(logits, deltas, anchors, image_hw, s: Settings):
    """One image: per-level objectness [A_l], deltas [A_l, 4], anchors [A_l, 4] -> (boxes
    [post_nms, 4], valid [post_nms])."""
    all_boxes, all_scores = [], []
    h, w = image_hw[0], image_hw[1]
    for lg, dl, an in zip(logits, deltas, anchors, strict=True):
        k = min(s.pre_nms, lg.shape[0])
        top, idx = jax.lax.top_k(lg, k)
        b = rcnn_targets.clip_boxes(rcnn_targets.decode(dl[idx], an[idx]), h, w)
        keep = nms.nms_mask(b, jnp.ones((k,), bool), s.rpn_nms)
        scores = jnp.where(keep, top, -jnp.inf)
        kk = min(s.post_nms_level, k)
        best, order = jax.lax.top_k(scores, kk)
        all_boxes.append(b[order])
        all_scores.append(best)
    boxes, scores = jnp.concatenate(all_boxes), jnp.concatenate(all_scores)
    best, order = jax.lax.top_k(scores, min(s.post_nms, scores.shape[0]))
    out, valid = boxes[order], best > -jnp.inf
    if out.shape[0] < s.post_nms:  # fewer anchors than proposals asked for (tiny inputs)
        pad = s.post_nms - out.shape[0]
        out = jnp.pad(out, ((0, pad), (0, 0)), constant_values=1.0)
        valid = jnp.pad(valid, (0, pad))
    return jax.lax.stop_gradient(out), valid


def rpn_targets(rng, gt_boxes, gt_valid, anchors, image_hw, s: Settings):
    """One image: anchors [A, 4] -> (sampled positive [A], sampled negative [A], box targets
    [A, 4])."""
    matches, _ = rcnn_targets.match(gt_boxes, gt_valid, anchors, 0.7, 0.3, True)
    h, w = image_hw[0], image_hw[1]
    inside = ((anchors[:, 0] >= 0) & (anchors[:, 1] >= 0) & (anchors[:, 2] - 1 < w)
              & (anchors[:, 3] - 1 < h))
    pos = inside & (matches >= 0)
    neg = inside & (matches == rcnn_targets.BELOW_LOW)
    pos, neg = rcnn_targets.sample(rng, pos, neg, s.rpn_batch, s.rpn_fraction)
    targets = rcnn_targets.encode(gt_boxes[jnp.maximum(matches, 0)], anchors)
    # Anchors matched to nothing (or to a padding row) have no finite target: zero them, so
    # no NaN reaches the loss through a multiplication by 0.
    return pos, neg, jnp.where(pos[:, None], targets, 0.0)


def roi_sample(rng, cands, cand_valid, gt_boxes, gt_labels, gt_valid, s: Settings):
    """One image: candidates [N, 4] -> (rois [512, 4], labels [512], matched gt row [512],
    slot valid [512])."""
    matches, _ = rcnn_targets.match(gt_boxes, gt_valid, cands, 0.5, 0.5, False)
    pos = cand_valid & (matches >= 0)
    neg = cand_valid & (matches == rcnn_targets.BELOW_LOW)
    pos, neg = rcnn_targets.sample(rng, pos, neg, s.roi_batch, s.roi_fraction)
    idx, slot_valid = rcnn_targets.sampled_indices(pos, neg, s.roi_batch)
    gt_row = jnp.maximum(matches[idx], 0)
    labels = jnp.where(pos[idx], gt_labels[gt_row], 0)
    return cands[idx], labels, gt_row, slot_valid


def losses(model_apply, params_state, batch, rng, anchors, strides, s: Settings):
    """The four losses of one batch (means as the reference takes them) and their sum."""
    feats = model_apply(params_state, batch["inputs"], method="features")
    logits, deltas = model_apply(params_state, feats, method="rpn")
    gt_boxes, gt_labels = batch["boxes"], batch["labels"]
    gt_valid = gt_labels > 0
    hw = batch["image_hw"]
    b = gt_boxes.shape[0]
    keys = jax.random.split(rng, 2 * b)
    rpn_keys, roi_keys = keys[:b], keys[b:]
    all_anchors = jnp.concatenate(anchors)

    # ---- RPN ----
    pos, neg, rtargets = jax.vmap(
        lambda k, g, v, im: rpn_targets(k, g, v, all_anchors, im, s))(rpn_keys, gt_boxes,
                                                                       gt_valid, hw)
    obj = jnp.concatenate(logits, axis=1)
    dlt = jnp.concatenate(deltas, axis=1)
    sampled = (pos | neg).astype(jnp.float32)
    n_rpn = jnp.maximum(jnp.sum(sampled), 1.0)
    rpn_obj = jnp.sum(optax.sigmoid_binary_cross_entropy(obj, pos.astype(jnp.float32))
                      * sampled) / n_rpn
    rpn_box = jnp.sum(smooth_l1(dlt - rtargets, 1.0 / 9).sum(-1) * pos) / n_rpn

    # ---- proposals + RoI sampling ----
    props, pvalid = jax.vmap(lambda lg, dl, im: proposals(lg, dl, anchors, im, s))(
        logits, deltas, hw)
    cands = jnp.concatenate([props, gt_boxes], axis=1)
    cvalid = jnp.concatenate([pvalid, gt_valid], axis=1)
    rois, labels, gt_row, slot_valid = jax.vmap(
        lambda k, c, cv, g, gl, gv: roi_sample(k, c, cv, g, gl, gv, s))(
        roi_keys, cands, cvalid, gt_boxes, gt_labels, gt_valid)
    pooled_feats = feats[:-1]  # P2..P5 (P6 is the RPN's only)
    pooled = jax.vmap(lambda f, r: _pool(f, r, s.box_pool, s, strides[:-1]))(
        pooled_feats, rois)
    r = s.roi_batch
    cls_logits, box_deltas = model_apply(params_state, pooled.reshape(b * r, *pooled.shape[2:]),
                                         method="box_head")
    labels_f, valid_f = labels.reshape(-1), slot_valid.reshape(-1).astype(jnp.float32)
    n_roi = jnp.maximum(jnp.sum(valid_f), 1.0)
    cls_loss = jnp.sum(optax.softmax_cross_entropy_with_integer_labels(cls_logits, labels_f)
                       * valid_f) / n_roi
    matched_gt = jnp.take_along_axis(gt_boxes, gt_row[..., None], axis=1)
    box_t = rcnn_targets.encode(matched_gt, rois, rcnn_targets.ROI_WEIGHTS).reshape(-1, 4)
    pred = jnp.take_along_axis(box_deltas, labels_f[:, None, None], axis=1)[:, 0]
    positive = (labels_f > 0).astype(jnp.float32)
    box_t = jnp.where(positive[:, None] > 0, box_t, 0.0)
    box_loss = jnp.sum(smooth_l1(pred - box_t, 1.0).sum(-1) * positive) / n_roi

    # ---- masks: the first mask_slots sampled RoIs (every positive) ----
    m = s.mask_slots
    mrois, mlabels, mrow = rois[:, :m], labels[:, :m], gt_row[:, :m]
    mpooled = jax.vmap(lambda f, rr: _pool(f, rr, s.mask_pool, s, strides[:-1]))(
        pooled_feats, mrois)
    mlogits = model_apply(params_state, mpooled.reshape(b * m, *mpooled.shape[2:]),
                          method="mask_head")
    crops = jnp.take_along_axis(batch["mask_crops"], mrow[..., None, None], axis=1)
    mgt = jnp.take_along_axis(gt_boxes, mrow[..., None], axis=1)
    mt = masks.targets(crops.reshape(b * m, *crops.shape[2:]), mgt.reshape(-1, 4),
                       mrois.reshape(-1, 4), s.mask_resolution)
    ml = mlabels.reshape(-1)
    chosen = jnp.take_along_axis(mlogits, ml[:, None, None, None], axis=3)[..., 0]
    mpos = (ml > 0).astype(jnp.float32)
    px = s.mask_resolution ** 2
    mask_loss = jnp.sum(optax.sigmoid_binary_cross_entropy(chosen, mt).sum((1, 2)) * mpos) / (
        jnp.maximum(jnp.sum(mpos), 1.0) * px)

    total = rpn_obj + rpn_box + cls_loss + box_loss + s.mask_loss_weight * mask_loss
    return total, {"rpn_objectness": rpn_obj, "rpn_box": rpn_box, "classifier": cls_loss,
                   "box_reg": box_loss, "mask": mask_loss,
                   "positive_rois": jnp.sum(positive) / b}


def detect(model_apply, variables, images, image_hw, anchors, strides, s: Settings):
    """Inference on a batch -> (boxes [B, D, 4] exclusive pixels, scores [B, D], labels [B, D],
    mask probabilities [B, D, 28, 28] of each detection's class)."""
    feats = model_apply(variables, images, method="features")
    logits, deltas = model_apply(variables, feats, method="rpn")
    props, pvalid = jax.vmap(lambda lg, dl, im: proposals(lg, dl, anchors, im, s))(
        logits, deltas, image_hw)
    b, r = props.shape[:2]
    pf = feats[:-1]
    pooled = jax.vmap(lambda f, rr: _pool(f, rr, s.box_pool, s, strides[:-1]))(pf, props)
    cls_logits, box_deltas = model_apply(variables, pooled.reshape(b * r, *pooled.shape[2:]),
                                         method="box_head")
    probs = jax.nn.softmax(cls_logits, -1).reshape(b, r, -1)
    probs = jnp.where(pvalid[..., None], probs, 0.0)
    k = probs.shape[-1]
    dec = rcnn_targets.decode(box_deltas.reshape(b, r, k, 4), props[:, :, None, :],
                              rcnn_targets.ROI_WEIGHTS)
    dec = jax.vmap(lambda d, im: rcnn_targets.clip_boxes(d, im[0], im[1]))(dec, image_hw)
    boxes, scores, labels = jax.vmap(lambda d, p: nms.select(
        d, p, s.score_threshold, s.det_nms, s.max_per_class, s.max_detections))(dec, probs)
    d = boxes.shape[1]
    safe = jnp.where(labels[..., None] > 0, boxes, jnp.array([0.0, 0.0, 1.0, 1.0]))
    mpooled = jax.vmap(lambda f, rr: _pool(f, rr, s.mask_pool, s, strides[:-1]))(pf, safe)
    mlogits = model_apply(variables, mpooled.reshape(b * d, *mpooled.shape[2:]),
                          method="mask_head")
    chosen = jnp.take_along_axis(mlogits, labels.reshape(-1)[:, None, None, None], axis=3)
    mprobs = jax.nn.sigmoid(chosen[..., 0]).reshape(b, d, s.mask_resolution, s.mask_resolution)
    return boxes, scores, labels, mprobs
