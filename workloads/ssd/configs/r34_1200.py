"""The MLPerf Inference v0.7 `ssd-resnet34` model: SSD-ResNet34 at 1200x1200 on COCO 2017.

Source: mlcommons/inference v0.7 vision/classification_and_detection/python/models/ssd_r34.py:
- `SSD_R34(strides=[3, 3, 2, 2, 2, 2])`: the same ResNet-34 backbone and additional blocks
  as the training model (channels 256/512/512/256/256/256), but every loc/conf head conv has
  stride 3 (strides[0], strides[1]) and padding 1, and the fourth additional block's 3x3 conv
  has stride 2 (strides[5]) unpadded: at 1200x1200 the maps are 150/75/38/19/9/7 and the heads
  give 50/25/13/7/3/3.
- `dboxes_R34_coco([1200, 1200], ...)`: feat_size 50, 25, 13, 7, 3, 3; steps
  int(1200 / feat) = 24, 48, 92, 171, 400, 400; scales int(s * 1200 / 300) for s in
  (21, 45, 99, 153, 207, 261, 315) = 84, 180, 396, 612, 828, 1044, 1260; aspect ratios
  (2), (2, 3), (2, 3), (2, 3), (2), (2): 15,130 default boxes.
- Post-processing (`decode_batch_with_nms_trace`): score > 0.05, per-class NMS at IoU 0.5 on
  the top 200 per class, the best 200 detections overall.

Checked abstractly at full size in tests/test_ssd.py: 19,972,534 parameters (the strides change
no weight shape, so the same count as SSD300), 15,130 boxes, the maps above by shape
inference, and the forward FLOPs per image by XLA's cost analysis (figure in that test).

    tpubench infer ssd --config=r34_1200 --scenario=Offline --workdir=DIR \\
        --config.data.dir=TFDS_DIR [--params=...]

Weights: `--config.model.checkpoint=FILE` loads the reference's whole model from its PyTorch
state dict (.pth with torch, or the same names as .npz) or its ONNX file's initializers
(workloads/ssd/convert.py `load_ssd_r34`; tested on a small made file, never on the published
file, which cannot be downloaded here). The TF model is not read. Served here it is labelled
NOT AN MLPERF RESULT (preprocessing by tf.image, not the reference's OpenCV).
"""

import ml_collections

from workloads.ssd.configs import full

# What a closed run needs besides the code (`tpubench list` prints it; the run checks it).
CLOSED_NEEDS = (
    "COCO 2017 through tfds (--config.data.dir) and torchvision's ImageNet "
    "ResNet-34 as .npz (--config.model.backbone_checkpoint)"
)


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.data.image_size = 1200
    c.model.head_stride = 3  # ssd_r34.py strides[0] (loc) and strides[1] (conf)
    c.model.extras = ((256, 512, 2, 1), (256, 512, 2, 1), (128, 256, 2, 1), (128, 256, 2, 0),
                      (128, 256, 1, 0))  # ssd_r34.py _build_additional_features, strides[2:]
    c.model.anchors = ml_collections.ConfigDict({  # ssd_r34.py dboxes_R34_coco([1200, 1200])
        "feat_size": (50, 25, 13, 7, 3, 3), "steps": (24, 48, 92, 171, 400, 400),
        "scales": (84, 180, 396, 612, 828, 1044, 1260),
        "aspect_ratios": ((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))})
    c.eval.batch_size = 64
    c.model.dtype = "float32"  # the v0.7 reference quality is FP32 (mAP 0.200)
    c.model.checkpoint = ""  # the reference's resnet34-ssd1200 weights (.pth / .npz / .onnx)
    return c
