"""SSD under MLPerf Inference v0.7 (`ssd-resnet34`), for the training model's configs: the
workload's eval images as the QSL, each sample's response its top detections after NMS (the
same jitted post-processing as the training eval), COCO mAP by pycocotools.

The v0.7 `ssd-resnet34` inference benchmark runs its own 1200x1200 model (not written yet);
every config served here (the mini on canvas digits, the 300x300 training model) is judged
against 99% of its own training eval on the same parameters and is never an MLPerf result.
v0.7 figures: Server p99 bound 100 ms, FP32 reference mAP 0.200, performance_sample_count 64.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from tpubench.detection import coco_eval, nms
from tpubench.infer.spec import InferenceSpec, Samples, eval_batches, training_eval_quality

# Ground truth packed per sample, [M, 9]: l, t, r, b, label, crowd, area, height, width.
GT_FIELDS = 9


def load_eval_samples(workload: Any) -> Samples:
    """Every real (mask 1) eval image, with its ground truth packed as [N, M, 9]."""
    images, truth = [], []
    for batch in eval_batches(workload):
        keep = np.asarray(batch["mask"]) > 0
        m = batch["labels"].shape[1]
        size = np.repeat(np.asarray(batch["size"], np.float32)[:, None, :], m, axis=1)
        packed = np.concatenate([
            np.asarray(batch["boxes"], np.float32), batch["labels"][..., None].astype(np.float32),
            batch["crowd"][..., None].astype(np.float32),
            np.asarray(batch["area"], np.float32)[..., None], size], axis=-1)
        images.append(np.asarray(batch["inputs"])[keep])
        truth.append(packed[keep])
    return Samples(np.concatenate(images), np.concatenate(truth))


def detection_map(num_classes: int):
    """`accuracy(outputs [N, D, 6] = l, t, r, b, score, label; labels [N, M, 9]) -> mAP`."""

    def accuracy(outputs: np.ndarray, labels: np.ndarray) -> float:
        out, gt = np.asarray(outputs, np.float64), np.asarray(labels, np.float64)
        return coco_eval.coco_map(
            gt[:, 0, 7:9], gt[..., :4], gt[..., 4].astype(np.int64), out[..., :4], out[..., 4],
            out[..., 5].astype(np.int64), num_classes, gt_crowd=gt[..., 5].astype(np.int64),
            gt_area=gt[..., 6])

    return accuracy


def ssd_inference_spec(workload: Any) -> InferenceSpec:
    """The `InferenceSpec` of an SSDWorkload (any config)."""
    model = workload.model()
    e = workload.config.eval

    def apply(params: Any, model_state: Any, images: Any) -> Any:
        offsets, logits = model.apply({"params": params, **model_state}, images, train=False)
        b, s, lab = nms.detect_batch(
            offsets, logits, jnp.asarray(workload.anchors_xywh),
            score_threshold=float(e.score_threshold), iou_threshold=float(e.nms_iou),
            max_per_class=int(e.max_per_class), max_detections=int(e.max_detections))
        return jnp.concatenate([b, s[..., None], lab[..., None].astype(jnp.float32)], -1)

    return InferenceSpec(
        mlperf_name="ssd-resnet34",
        load_samples=lambda: load_eval_samples(workload),
        apply=apply,
        accuracy=detection_map(int(workload.config.model.num_classes)),
        server_latency_bound_ms=100.0,
        reference_quality=0.200,
        quality_fraction=0.99,
        quality_metric="mAP",
        performance_sample_count=64,
        benchmark_model_and_data=False,
        measure_reference=lambda p, s: training_eval_quality(workload, p, s),
    )
