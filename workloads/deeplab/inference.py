"""DeepLabv3+ MobileNetV2 under MLPerf mobile v0.7 (`deeplabv3`): SingleStream only, served by
LoadGen through `tpubench.infer`.

What the mobile reference does (mlcommons/mobile_open vision/deeplab) and what this does:
  * Samples: the ADE20K val images resized to 512x512 with their 32-class label maps
    (`ade20k_512x512_dataset_on_device`); here the workload's eval images (full: the same
    ADE20K preparation, `ade20k.py`; the mini: its fixed held-out canvases), loaded before
    LoadGen starts (untimed).
  * Response: the argmax class map (the TFLite model's output, `predict_labels` of the
    exported graph): uint8 [H, W], one byte a pixel.
  * Accuracy: mean IoU over the classes from the confusion matrix of every pixel (eval.py's
    `tf.metrics.mean_iou`, label 0 ignored on ADE20K; `miou.py`), computed from LoadGen's
    accuracy log with the same integer counts as the training eval.
  * Target: 97% of the FP32 model's 0.5528 (../shared/docs/WORKLOADS.md; the reference
    README's "accuracy target"); the mobile suite runs segmentation in SingleStream only, so any
    other scenario is refused before any compute. The 2,000 val images are its sample count.
Configs: full (the 512x512 model on ADE20K, `data.source=ade20k`; the synthetic source is
refused: random labels are no quality), and the minis, judged against 97% of the training
eval's mIoU on the same parameters.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from tpubench.errors import UsageError
from tpubench.infer.spec import InferenceSpec, labelled_eval_samples, training_eval_quality
from workloads.deeplab import miou
from workloads.deeplab.configs.full import REFERENCE_MIOU

SCENARIOS = ("SingleStream",)
QUALITY_FRACTION = 0.97
PERFORMANCE_SAMPLE_COUNT = 2000  # ADE20K val; the mobile reference's run logged 635 loaded



def mean_iou_metric(num_classes: int, ignore_label: int):
    """`accuracy(outputs [N, H, W] class per pixel, labels [N, H, W]) -> mean IoU`."""

    def accuracy(outputs: np.ndarray, labels: np.ndarray) -> float:
        pred = np.asarray(outputs).reshape(labels.shape).astype(np.int64)
        return miou.mean_iou(miou.confusion_np(pred, labels, num_classes, ignore_label),
                             num_classes)

    return accuracy


def deeplab_inference_spec(workload: Any) -> InferenceSpec:
    """The `InferenceSpec` of a DeepLabWorkload; `UsageError` for data it cannot serve."""
    c = workload.config
    if c.data.source == "synthetic":
        raise UsageError("deeplab inference serves the workload's eval images, and "
                         "data.source=synthetic has none. Use --config.data.source=ade20k "
                         "(ADE20K in config.data.dir) or --config=mini (canvas digits).")
    workload.check_data()
    k = int(c.model.num_classes)
    if k > 256:
        raise UsageError(f"{k} classes do not fit the uint8 response.")

    def apply(params: Any, model_state: Any, inputs: Any) -> Any:
        return workload.predict(params, model_state, inputs).astype(jnp.uint8)

    return InferenceSpec(
        mlperf_name="deeplabv3",
        load_samples=lambda: labelled_eval_samples(workload),
        apply=apply,
        accuracy=mean_iou_metric(k, workload.ignore_label),
        server_latency_bound_ms=0.0,  # SingleStream only
        reference_quality=REFERENCE_MIOU,
        quality_fraction=QUALITY_FRACTION,
        quality_metric="mean_iou",
        performance_sample_count=PERFORMANCE_SAMPLE_COUNT,
        benchmark_model_and_data=False,
        measure_reference=lambda p, s: training_eval_quality(workload, p, s),
        scenarios=SCENARIOS,
    )
