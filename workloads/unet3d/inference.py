"""3D U-Net under MLPerf Inference v0.7 (`3d-unet-99`, `3d-unet-99.9`): Offline only, served by
LoadGen through `tpubench.infer`.

What the v0.7 reference does (mlcommons/inference v0.7/medical_imaging/3d-unet) and what this
module does:
  * Samples: one preprocessed BraTS 2019 case a sample, [4, 224, 224, 160] (README "Details";
    brats_QSL.py loads the preprocessed .pkl in LoadSamplesToRam). Here `load_samples` reads
    and pads every case before LoadGen starts (untimed), channels last (`brats.py`).
  * Response: the reference returns the float16 softmax [4, 224, 224, 160]; its accuracy script
    un-pads it, writes the argmax segmentation (nnU-Net's save_segmentation_nifti_from_softmax)
    and scores that. Here the response is that argmax per voxel (int8 [224, 224, 160]): what is
    scored, 1/8 of the bytes.
  * Accuracy (accuracy-brats.py -> nnU-Net evaluate_regions(get_brats_regions())): Dice of whole
    tumour (1, 2, 3), tumour core (2, 3), enhancing tumour (3) per case, NaN when both empty,
    mean over cases, mean of the three (`dice.py`); padding voxels count nowhere.
  * Targets (tools/submission/submission-checker.py, MODEL_CONFIG["v0.7"]["accuracy-target"]):
    3d-unet-99 ("DICE", 0.853 * 0.99) = 0.84447, 3d-unet-99.9 ("DICE", 0.853 * 0.999) =
    0.852147; the 0.853 is the reference FP32 model's mean Dice (v0.7 3d-unet README: mean
    0.85300, WT 0.9141, TC 0.8679, ET 0.7770, fold 1); "performance-sample-count" 16. v0.7 runs
    3d-unet in Offline (and SingleStream at the edge); the datacenter Offline is what is served
    here, and any other scenario is refused.
Configs: full (BraTS from --config.data.dir / --config.data.label_dir; weights from the
reference's ONNX model through `convert.py`), judged against the absolute targets; mini (the
44 MNI eval crops of the training mini), judged against 99% / 99.9% of the training eval's mean
Dice on the same parameters. Variant: --config.eval.inference_variant=3d-unet-99 (default) or
3d-unet-99.9.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from tpubench.errors import UsageError
from tpubench.infer.spec import (
    InferenceSpec,
    accuracy_variant,
    labelled_eval_samples,
    training_eval_quality,
)
from workloads.unet3d import dice
from workloads.unet3d.configs.full import REFERENCE_MEAN_DICE

VARIANTS = {"3d-unet-99": 0.99, "3d-unet-99.9": 0.999}
PERFORMANCE_SAMPLE_COUNT = 16
SCENARIOS = ("Offline", "SingleStream")  # datacenter Offline; edge SingleStream + Offline
MINI_BATCH_SIZES = (1, 8, 44)
FULL_BATCH_SIZES = (1, 2)



def mean_dice_metric(regions):
    """`accuracy(outputs [N, ...] class per voxel, labels [N, ...]) -> mean Dice`."""

    def accuracy(outputs: np.ndarray, labels: np.ndarray) -> float:
        pred = np.asarray(outputs).reshape(labels.shape).astype(np.int32)
        return dice.mean_dice(dice.counts_np(pred, labels, regions))

    return accuracy


def unet3d_inference_spec(workload: Any) -> InferenceSpec:
    """The `InferenceSpec` of a UNet3DWorkload; `UsageError` for data it cannot serve."""
    c = workload.config
    name, fraction = accuracy_variant(c, VARIANTS, "3D U-Net")
    if c.data.source == "synthetic":
        raise UsageError("unet3d inference serves the workload's eval volumes, and "
                         "data.source=synthetic has none. Use --config=mini (MNI crops) or "
                         "--config=full with data.source=brats.")
    workload.check_data()  # the dataset is there (paths only), before any compute

    def apply(params: Any, model_state: Any, inputs: Any) -> Any:
        return workload.predict(params, model_state, inputs).astype(jnp.int8)

    is_full = c.data.source == "brats" and tuple(c.data.eval_shape) == (224, 224, 160)
    return InferenceSpec(
        mlperf_name=name,
        load_samples=lambda: labelled_eval_samples(workload),
        apply=apply,
        accuracy=mean_dice_metric(workload.regions()),
        server_latency_bound_ms=0.0,  # no Server scenario in v0.7 3d-unet
        reference_quality=REFERENCE_MEAN_DICE,
        quality_fraction=fraction,
        quality_metric="mean_dice",
        performance_sample_count=PERFORMANCE_SAMPLE_COUNT,
        benchmark_model_and_data=is_full,
        measure_reference=None if is_full else (
            lambda p, s: training_eval_quality(workload, p, s)),
        batch_sizes=FULL_BATCH_SIZES if is_full else MINI_BATCH_SIZES,
        scenarios=SCENARIOS,
    )
