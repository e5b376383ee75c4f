"""SSD-MobileNet v1 at 300x300 (MLPerf Inference v0.7 `ssd-mobilenet`), checked abstractly.

The TF object-detection `ssd_mobilenet_v1_coco` layout (the v0.7 reference model is its
ssd_mobilenet_v1_coco_2018_01_28 checkpoint): MobileNet v1 taps 19x19x512 and 10x10x1024
(workloads/ssd/mobilenet.py), four extra blocks 1x1 (256, 128, 128, 64) + 3x3 s2
(512, 256, 256, 128) with BN and ReLU6 (maps 5, 3, 2, 1), 1x1 box-predictor convs, the
ssd_anchor_generator's min_scale 0.2 / max_scale 0.95 (box sides 60, 105, ..., 285 px) with
aspect ratios 1, 2, 1/2, 3, 1/3 (the same figures as PaddleDetection's port of it:
extra_block_filters [[256, 512], [128, 256], [128, 256], [64, 128]], kernel_size 1,
min_sizes 60-285, max_sizes 150-300).

Differences kept on purpose, so the shared detection code serves it: the default boxes are
the PyTorch reference's generator (`tpubench.detection.default_boxes`: 2 square sizes + 2 per
aspect ratio), so the 19x19 map has 4 boxes per cell where TF's `reduce_boxes_in_lowest_layer`
has 3 (2,278 boxes instead of TF's 1,917), and 81 labels (our COCO pipeline's) instead of TF's
91. The MobileNet body matches Keras's MobileNet to the parameter (tests/test_ssd_mobilenet.py).
Not trainable to the MLPerf quality here. Published weights: the v0.7 reference's frozen
graph through workloads/ssd/convert_mobilenet.py (`model.backbone_checkpoint`: the body and
extra blocks; its heads do not fit this config's 4 boxes on the 19x19 map and 81 labels, so
`model.checkpoint`, the whole model, is refused for it).
"""

import ml_collections

from workloads.ssd.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.is_mlperf = False
    c.submission.division = "open"
    c.model.backbone = "mobilenet_v1"
    c.model.width = 1.0
    c.model.stem_stride = 2
    c.model.head_kernel = 1
    c.model.extras = ((256, 512, 2, -1), (128, 256, 2, -1), (128, 256, 2, -1), (64, 128, 2, -1))
    c.model.anchors = ml_collections.ConfigDict({
        "feat_size": (19, 10, 5, 3, 2, 1), "steps": (16, 32, 64, 100, 150, 300),
        "scales": (60, 105, 150, 195, 240, 285, 300),
        "aspect_ratios": ((2,), (2, 3), (2, 3), (2, 3), (2, 3), (2, 3))})
    c.eval.batch_size = 64
    # The v0.7 reference's ssd_mobilenet_v1_coco_2018_01_28 frozen graph (.pb, or .npz of its
    # constants): backbone_checkpoint loads the backbone and extra blocks, checkpoint the
    # whole model (its heads do not fit this config's: workloads/ssd/convert_mobilenet.py).
    c.model.checkpoint = ""
    c.model.depthwise_impl = "conv"  # grouped convs (the minis: "shifts", for XLA:CPU)
    # Keras MobileNet / MobileNetV2's BatchNormalization momentum (epsilon 1e-3 in the model);
    # the TF OD pipeline that trained the reference checkpoint used decay 0.9997
    # (object_detection/samples/configs/ssd_mobilenet_v1_coco.config). Training only.
    c.model.bn_momentum = 0.999
    c.model.dtype = "float32"
    return c
