"""The SSD family under MLPerf Inference v0.7: the workload's eval images as the QSL, each
sample's response its top detections after NMS (the same jitted post-processing as the
training eval), COCO mAP by pycocotools from LoadGen's accuracy log.

Which benchmark a config is modelled on follows its backbone (`model.backbone`):
- resnet34 -> `ssd-resnet34` (datacenter and edge: Offline, Server, SingleStream,
  MultiStream); the benchmark's own model is configs/r34_1200.py.
- mobilenet_v1 -> `ssd-mobilenet` (edge only: Offline, SingleStream, MultiStream).
- mobilenet_v2 -> `ssd-mobilenetv2` (the MLPerf Mobile suite's detector; not a v0.7
  Inference benchmark, so no v0.7 reference quality).
v0.7 figures (MLPerf Inference v0.7 rules, benchmark table; the reference README,
mlcommons/inference vision/classification_and_detection, "Supported Models"): ssd-resnet34
Server p99 100 ms, MultiStream 66 ms per query, performance_sample_count 64, FP32 mAP 0.20;
ssd-mobilenet MultiStream 50 ms, performance_sample_count 256. ssd-mobilenet's quality bar
is 99% of mAP 0.22 (= 0.2178: mlcommons/inference tools/submission/submission-checker.py
`"ssd-small": ("mAP", 22 * 0.99)`, MODEL_MAPPING ssd-mobilenet -> ssd-small;
../shared/docs/WORKLOADS.md ">= 21.78"), although the reference README lists the TF model
at mAP 0.23.

No config here is an MLPerf result: the minis are small models on canvas digits, judged
against 99% of their own training eval on the same parameters; r34_1200 is the benchmark's
model but has no converter for the published weights and resizes with tf.image rather than
the reference's OpenCV, so it too is labelled NOT AN MLPERF RESULT.
"""

from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """The v0.7 figures of one SSD benchmark."""

    name: str
    scenarios: tuple[str, ...]
    server_ms: float
    multistream_ms: float
    sample_count: int
    reference_map: float


ALL = ("Offline", "Server", "SingleStream", "MultiStream")
EDGE = ("Offline", "SingleStream", "MultiStream")
BENCHMARKS = {
    "resnet34": Benchmark("ssd-resnet34", ALL, 100.0, 66.0, 64, 0.200),  # checker: 20 * 0.99
    "mobilenet_v1": Benchmark("ssd-mobilenet", EDGE, 0.0, 50.0, 256, 0.220),  # checker's 22
    # MLPerf Mobile's detector: the v0.7 ssd-mobilenet's edge figures, no v0.7 quality.
    "mobilenet_v2": Benchmark("ssd-mobilenetv2", EDGE, 0.0, 50.0, 256, 0.0),
}


def benchmark_of(config: Any) -> Benchmark:
    """The benchmark a config is modelled on, from `model.backbone` (default resnet34)."""
    return BENCHMARKS[str(config.model.get("backbone", "resnet34"))]


def ssd_inference_spec(workload: Any) -> InferenceSpec:
    """The `InferenceSpec` of an SSDWorkload (any config, any backbone)."""
    model = workload.model()
    e = workload.config.eval

    def apply(params: Any, model_state: Any, images: Any) -> Any:
        offsets, logits = model.apply({"params": params, **model_state}, images, train=False)
        b, s, lab = nms.detect_batch(
            offsets, logits, jnp.asarray(workload.anchors_xywh),
            score_threshold=float(e.score_threshold), iou_threshold=float(e.nms_iou),
            max_per_class=int(e.max_per_class), max_detections=int(e.max_detections))
        return jnp.concatenate([b, s[..., None], lab[..., None].astype(jnp.float32)], -1)

    bench = benchmark_of(workload.config)
    return InferenceSpec(
        mlperf_name=bench.name,
        load_samples=lambda: load_eval_samples(workload),
        apply=apply,
        accuracy=detection_map(int(workload.config.model.num_classes)),
        # Edge benchmarks have no Server bound; `scenarios` refuses Server before it is used.
        server_latency_bound_ms=bench.server_ms or bench.multistream_ms,
        multistream_latency_bound_ms=bench.multistream_ms,
        reference_quality=bench.reference_map,
        quality_fraction=0.99,
        quality_metric="mAP",
        performance_sample_count=bench.sample_count,
        scenarios=bench.scenarios,
        benchmark_model_and_data=False,
        measure_reference=lambda p, s: training_eval_quality(workload, p, s),
    )
