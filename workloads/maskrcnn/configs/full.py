"""Mask R-CNN R-50-FPN on COCO 2017, MLPerf Training v0.7 closed division.

    tpubench run maskrcnn --config=full --workdir=DIR --config.data.dir=TFDS_DIR \
        --config.data.annotations_dir=COCO_DIR/annotations \
        --config.model.backbone_checkpoint=R-50.pkl
    tpubench fit maskrcnn --config=full --topology=v4:2x2x1
    tpubench run maskrcnn --config=full --config.data.source=synthetic

Numbers from the v0.7 reference, mlcommons/training object_detection/pytorch
(maskrcnn_benchmark/config/defaults.py and configs/e2e_mask_rcnn_R_50_FPN_1x.yaml): SGD lr
0.02 at batch 16, momentum 0.9, weight decay 1e-4, steps (60000, 80000) x 0.1, 90,000 iterations,
linear warmup of 500; images 800-1333 padded into one static 1344 x 1344 bucket; RPN and RoI
heads as the reference (anchors 32-512, 1,000 post-NMS proposals per image, box pooler 7x7,
mask pooler 14x14, masks 28x28, 81 classes, FREEZE_CONV_BODY_AT 2); target box AP 0.377 AND mask
AP 0.339, evaluated every epoch of 117,266 train images on the 5,000 val2017 images.
The full list of reference keys: workloads/maskrcnn/README.md.

Needs (extras `tfds` and `detection`): COCO from tensorflow-datasets' coco/2017 plus COCO's
instances_{train,val}2017.json (`data.annotations_dir`; tfds keeps no segmentation), and the
reference's ImageNet backbone, Detectron's MSRA R-50.pkl (`model.backbone_checkpoint`, read by
workloads/maskrcnn/msra.py). Tested on tfds mock data and a made pickle only
(tests/test_maskrcnn_coco.py, tests/test_maskrcnn_msra.py). Without R-50.pkl a closed run stops
before any compute (`MaskRCNNWorkload.closed_requirements`); a torchvision R-50 (.npz) is another
network under the frozen stem, res2 and batch norms: `--config.submission.division=open`.

Measured: not run to target (needs COCO with masks and an accelerator).
`tpubench fit maskrcnn --config=full --topology=v4:2x2x1` (2026-12-02e, on the shared 2-core
host at a load average of 10-17) finished in 78.7 wall minutes (AOT compile 4,357.6 s): train
block 11.497 GiB per device, eval step 2.934 GiB; 9.449 TFLOP and 187.811 GB accessed per step
per device; roofline step >= 156.509 ms (memory bound) -> at most 102 examples/s; FITS: 11.50 of
32 GiB HBM (36%). Why the first fits did not finish: workloads/maskrcnn/README.md.
"""

import ml_collections

from tpubench.config import base_config
from tpubench.mlperf import rules

# What a closed run needs besides the code (`tpubench list` prints it; the run checks it).
CLOSED_NEEDS = (
    "COCO 2017 through tfds (--config.data.dir), COCO's "
    "instances_{train,val}2017.json (--config.data.annotations_dir) and Detectron's "
    "MSRA R-50.pkl (--config.model.backbone_checkpoint)"
)

TRAIN_SAMPLES = 117_266
EVAL_SAMPLES = 5_000
REFERENCE_BATCH = 16


def get_config() -> ml_collections.ConfigDict:
    c = base_config()
    c.workload = "maskrcnn"
    c.is_mlperf = True
    c.submission.division = "closed"
    c.data.dataset = "coco/2017"
    c.data.source = "tfds"
    c.data.eval_split = "validation"
    c.data.annotations_dir = ""  # instances_{train,val}2017.json (workloads/maskrcnn/coco.py)
    c.data.min_image_size = 800
    c.data.max_image_size = 1333
    c.data.image_size = 1344  # the padded bucket (multiple of 64 >= 1333)
    c.data.image_channels = 3
    c.data.max_boxes = 100  # ground-truth instances per image, padded
    c.data.gt_mask_size = 112  # each instance's mask cut to its box, at 112 x 112
    c.data.train_samples = TRAIN_SAMPLES
    c.eval.samples = EVAL_SAMPLES
    c.data.global_batch_size = REFERENCE_BATCH
    c.eval.batch_size = 8  # TEST.IMS_PER_BATCH
    c.model.num_classes = 81
    c.model.stage_sizes = (3, 4, 6, 3)
    c.model.widths = (64, 128, 256, 512)
    c.model.stem_width = 64
    c.model.stride_in_1x1 = True
    c.model.freeze_at = 2
    c.model.frozen_bn = True
    c.model.fpn_channels = 256
    c.model.mlp_dim = 1024
    c.model.mask_convs = (256, 256, 256, 256)
    c.model.mask_loss_weight = 1.0  # the reference's plain sum of the losses (the mini: mini.py)
    c.model.anchor_sizes = (32, 64, 128, 256, 512)
    c.model.anchor_strides = (4, 8, 16, 32, 64)
    c.model.aspect_ratios = (0.5, 1.0, 2.0)
    c.model.rpn = ml_collections.ConfigDict({
        "pre_nms_train": 2000, "post_nms_train": 2000, "fpn_post_nms_train": 1000,
        "pre_nms_test": 1000, "post_nms_test": 1000, "fpn_post_nms_test": 1000,
        "nms": 0.7, "batch": 256, "fraction": 0.5, "num_image_candidates": 1000})
    c.model.roi = ml_collections.ConfigDict({"batch": 512, "fraction": 0.25,
                                             "canonical_scale": 224.0})
    c.model.backbone_checkpoint = ""
    c.model.dtype = "bfloat16"
    c.optimizer.update({"name": "sgd", "learning_rate": 0.02 * c.data.global_batch_size / 16,
                        "momentum": 0.9, "weight_decay": 1e-4, "bias_lr_factor": 2.0})
    scale = REFERENCE_BATCH / c.data.global_batch_size
    c.schedule.warmup_steps = int(500 * scale)
    c.schedule.warmup_factor = 1.0 / 3
    c.schedule.decay_factor = 0.1
    c.schedule.decay_steps = (int(60_000 * scale), int(80_000 * scale))
    c.eval.score_threshold = 0.05
    c.eval.nms_iou = 0.5
    c.eval.max_per_class = 100
    c.eval.max_detections = 100
    c.eval.mask_paste = "reference"  # mask_head/inference.py Masker (tpubench/detection/masks.py)
    c.eval.target_metric = "box AP / mask AP"
    c.eval.target_values = ml_collections.ConfigDict(rules.target_thresholds("maskrcnn"))
    c.eval.target_value = c.eval.target_values.BBOX
    c.eval.every_samples = c.data.train_samples
    c.run.max_train_samples = 90_000 * REFERENCE_BATCH
    c.run.steps_per_dispatch = 4
    return c
