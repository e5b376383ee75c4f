"""MobileNetEdgeTPU 224 on ImageNet val: the MLPerf Inference v0.7 mobile image classification
benchmark (`mobilenet-edgetpu`), served by `tpubench infer` (SingleStream and Offline).

    tpubench infer resnet --config=mobilenet_edgetpu --scenario=SingleStream --workdir=DIR \\
        --config.data.dir=TFDS_DIR --config.model.checkpoint=edge_frozen_graph.pb \\
        [--mode=accuracy] [--quantize=int8] [--profile=v0.7]

The network is TF-slim's `V3_EDGETPU` at depth multiplier 1 (`workloads/resnet/
mobilenet_edgetpu.py`): 1001 classes (class 0 the background, hence `label_offset` 1),
4,092,713 parameters, 1.963 GFLOP per image (XLA cost analysis; tests/test_mobilenet_edgetpu.py).
Target: top-1 >= 98% of the FP32 reference's 76.19% = 74.666% on the 50,000 validation images.
Eval preprocessing: the resnet pipeline's center crop (87.5% of the shorter side, as MLPerf
mobile's central crop 0.875) resized to 224, uint8 pixels scaled to [-1, 1] on device (the
inception preprocessing); the pipeline resizes bicubic where the mobile app resizes bilinear.
`model.checkpoint`: the published weights (the mobilenet_edgetpu_224_1.0 frozen graph, or an
.npz of its names; `workloads/resnet/convert_mobilenet_edgetpu.py`, tested on a made file only).
Measured: not run here (no ImageNet and no published weights on this machine; a random init
is labelled NOT AN MLPERF RESULT). This config is inference only: MLPerf Training
v0.7 has no MobileNet benchmark, and a `tpubench run` of it would use the ResNet schedule.
"""

import ml_collections

from workloads.resnet.configs import full


def set_mobilenet_edgetpu(c: ml_collections.ConfigDict, width: float = 1.0, blocks: int = 22,
                          stem_stride: int = 2) -> None:
    """`model.arch` mobilenet_edgetpu with its keys (`workloads/resnet/mobilenet_edgetpu.py`)."""
    c.model.arch = "mobilenet_edgetpu"
    c.model.update({"width": width, "blocks": blocks, "stem_stride": stem_stride,
                    "bn_momentum": 0.997, "depthwise_impl": "conv", "label_offset": 0,
                    "checkpoint": ""})


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    # Not an MLPerf Training config (v0.7 Training has no MobileNet): `tpubench infer` judges
    # whether a config is the inference benchmark's model and data from the model and data
    # themselves (workloads/resnet/inference.py `is_mobilenet_edgetpu_benchmark`).
    c.is_mlperf = False
    c.submission.division = "open"
    set_mobilenet_edgetpu(c)
    c.model.num_classes = 1001
    c.model.label_offset = 1
    c.model.dtype = "float32"
    c.eval.batch_size = 1024
    c.eval.target_metric = "top1_accuracy"
    c.eval.target_value = 0.98 * 0.7619
    return c
