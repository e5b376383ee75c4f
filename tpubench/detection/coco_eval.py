"""COCO box mAP by `pycocotools` (the MLPerf reference's evaluator), from in-memory arrays.

The reference (mlcommons/training single_stage_detector/ssd/train.py `coco_eval`) turns each
detection into [image_id, l * W, t * H, (r - l) * W, (b - t) * H, score, category] in pixels,
`cocoGt.loadRes`es them and reports `COCOeval(cocoGt, cocoDt, "bbox")` `stats[0]`,
AP@[.5:.95] over all areas with at most 100 detections per image. This module does the same
from arrays, building the ground-truth COCO object from the same arrays (boxes, labels, crowd
flags, areas), so one function serves COCO and the canvas digits. Nothing is computed by hand.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np


def _ground_truth(sizes, gt_boxes, gt_labels, gt_crowd, gt_area, num_classes, gt_rles=None):
    from pycocotools.coco import COCO

    images, annotations = [], []
    ann_id = 1
    for i, (h, w) in enumerate(np.asarray(sizes, np.float64)):
        images.append({"id": i + 1, "height": float(h), "width": float(w)})
        for j in np.nonzero(gt_labels[i] > 0)[0]:
            x0, t, r, b = (float(v) for v in gt_boxes[i, j])
            bw, bh = (r - x0) * w, (b - t) * h
            area = float(gt_area[i, j]) if gt_area is not None else bw * bh
            annotations.append({
                "id": ann_id, "image_id": i + 1, "category_id": int(gt_labels[i, j]),
                "bbox": [x0 * w, t * h, bw, bh], "area": area,
                "iscrowd": int(gt_crowd[i, j]) if gt_crowd is not None else 0})
            if gt_rles is not None:
                annotations[-1]["segmentation"] = gt_rles[i][j]
            ann_id += 1
    if not annotations:
        raise ValueError("coco_eval: the ground truth has no boxes; mAP is undefined.")
    coco = COCO()
    coco.dataset = {"images": images, "annotations": annotations,
                    "categories": [{"id": c} for c in range(1, num_classes)]}
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
    return coco


def detections_array(sizes, det_boxes, det_scores, det_labels) -> np.ndarray:
    """[N, 7] rows (image_id, x, y, w, h, score, category) in pixels for `COCO.loadRes`, from
    padded per-image arrays (label 0 = empty slot)."""
    rows = []
    for i, (h, w) in enumerate(np.asarray(sizes, np.float64)):
        keep = np.asarray(det_labels[i]) > 0
        b = np.asarray(det_boxes[i], np.float64)[keep]
        if not len(b):
            continue
        rows.append(np.stack([
            np.full(len(b), i + 1.0), b[:, 0] * w, b[:, 1] * h, (b[:, 2] - b[:, 0]) * w,
            (b[:, 3] - b[:, 1]) * h, np.asarray(det_scores[i], np.float64)[keep],
            np.asarray(det_labels[i], np.float64)[keep]], axis=1))
    return np.concatenate(rows) if rows else np.zeros((0, 7))


def coco_stats(sizes, gt_boxes, gt_labels, det_boxes, det_scores, det_labels, num_classes: int,
               gt_crowd=None, gt_area=None) -> np.ndarray:
    """The 12 `COCOeval.stats` (stats[0] = AP@[.5:.95]) of padded per-image arrays.

    sizes [N, 2] (height, width) in pixels; gt_boxes [N, M, 4] and det_boxes [N, D, 4]
    normalised ltrb; gt_labels [N, M], det_labels [N, D] int with 0 = padding; det_scores [N, D];
    num_classes counts the background (categories 1 .. num_classes - 1).
    No detection at all: AP 0 (pycocotools cannot load an empty result).
    """
    from pycocotools.cocoeval import COCOeval

    gt_labels = np.asarray(gt_labels)
    gt_boxes = np.asarray(gt_boxes, np.float64)
    gt = _ground_truth(sizes, gt_boxes, gt_labels, gt_crowd, gt_area, num_classes)
    dets = detections_array(sizes, det_boxes, det_scores, det_labels)
    if not len(dets):
        return np.zeros(12)
    with contextlib.redirect_stdout(io.StringIO()):
        dt = gt.loadRes(dets)
        e = COCOeval(gt, dt, iouType="bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
    return np.asarray(e.stats, np.float64)


def coco_box_mask_stats(sizes, gt_boxes, gt_labels, gt_rles, det_boxes, det_scores, det_labels,
                        det_rles, num_classes: int, gt_crowd=None, gt_area=None,
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The 12 `COCOeval.stats` for "bbox" and for "segm" (Mask R-CNN's two qualities).

    As `coco_stats`, plus gt_rles[i][j] (the RLE of ground truth (i, j), any j with a label)
    and det_rles[i][k] (detection (i, k), any k with a label), RLEs of the original image
    (`masks.encode_rle`). The box results carry only boxes and the mask results only masks, as
    the reference's coco_eval.py `prepare_for_coco_detection` / `..._segmentation` keep them
    apart (loadRes would otherwise replace the boxes by the masks' extents).
    """
    from pycocotools.cocoeval import COCOeval

    gt_labels = np.asarray(gt_labels)
    gt = _ground_truth(sizes, np.asarray(gt_boxes, np.float64), gt_labels, gt_crowd, gt_area,
                       num_classes, gt_rles)
    boxes = detections_array(sizes, det_boxes, det_scores, det_labels)
    segm = [{"image_id": i + 1, "category_id": int(det_labels[i][k]),
             "segmentation": det_rles[i][k], "score": float(det_scores[i][k])}
            for i in range(len(det_labels)) for k in np.nonzero(np.asarray(det_labels[i]) > 0)[0]]
    out = []
    for kind, dets in (("bbox", boxes), ("segm", segm)):
        if not len(dets):
            out.append(np.zeros(12))
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            dt = gt.loadRes(dets)
            e = COCOeval(gt, dt, iouType=kind)
            e.evaluate()
            e.accumulate()
            e.summarize()
        out.append(np.asarray(e.stats, np.float64))
    return out[0], out[1]


def coco_map(*args, **kwargs) -> float:
    """AP@[.5:.95] (`coco_stats(...)[0]`, the MLPerf SSD quality)."""
    return float(coco_stats(*args, **kwargs)[0])
