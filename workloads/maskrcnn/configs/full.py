"""Mask R-CNN R-50-FPN on COCO 2017, MLPerf Training v0.7 closed division.

Numbers from the v0.7 reference, mlcommons/training object_detection/pytorch
(maskrcnn_benchmark/config/defaults.py and configs/e2e_mask_rcnn_R_50_FPN_1x.yaml):
- SOLVER: BASE_LR 0.02 at IMS_PER_BATCH 16 (lr = 0.02 * batch / 16; the checker wants a multiple
  of 0.02), MOMENTUM 0.9, WEIGHT_DECAY 1e-4, WEIGHT_DECAY_BIAS 0, BIAS_LR_FACTOR 2, STEPS
  (60000, 80000) x GAMMA 0.1, MAX_ITER 90000, WARMUP_FACTOR 1/3, WARMUP_ITERS 500 (linear).
- INPUT: MIN_SIZE_TRAIN 800, MAX_SIZE_TRAIN 1333 (same for test); DATALOADER.SIZE_DIVISIBILITY
  32. Static shapes: every image resized so, then padded into one 1344 x 1344 bucket (1333
  rounded up to a multiple of 64, P6's stride).
- RPN: ANCHOR_SIZES (32, 64, 128, 256, 512), ANCHOR_STRIDE (4, 8, 16, 32, 64), ASPECT_RATIOS
  (0.5, 1, 2), FG/BG IoU 0.7/0.3, BATCH_SIZE_PER_IMAGE 256, POSITIVE_FRACTION 0.5, NMS_THRESH
  0.7, PRE_NMS_TOP_N_TRAIN 2000, POST_NMS_TOP_N_TRAIN 2000, FPN_POST_NMS_TOP_N_TRAIN 2000 per
  2-image GPU batch (= 1000 per image here, workloads/maskrcnn/rcnn.py), PRE/POST/FPN_POST test
  1000; `num_image_candidates` logs the per-image 1000 (as Google's TPU v0.7 submission logs
  its rpn_post_nms_topn).
- ROI_HEADS: FG/BG IoU 0.5/0.5, BBOX_REG_WEIGHTS (10, 10, 5, 5), BATCH_SIZE_PER_IMAGE 512,
  POSITIVE_FRACTION 0.25, SCORE_THRESH 0.05, NMS 0.5, DETECTIONS_PER_IMG 100; box pooler 7x7,
  mask pooler 14x14, sampling ratio 2, masks 28x28, 81 classes; FREEZE_CONV_BODY_AT 2.
- MLPERF: MIN_BBOX_MAP 0.377, MIN_SEGM_MAP 0.339 (here from tpubench/mlperf/rules.py); evaluation
every
  epoch (../shared/docs/WORKLOADS.md); 117,266 train images (COCO train2017 with annotations:
  the reference's COCODataset drops images without any) and the 5,000 val2017 images.
- Backbone: ImageNet R-50 from a user-provided file (`model.backbone_checkpoint`, a torchvision
  state dict as .npz: tpubench/convert/torchvision.py). The reference loads the MSRA Caffe2 R-50
  (stride in the 1x1 conv, `STRIDE_IN_1X1 = True`); converting its Caffe2 names is not written.

Data (workloads/maskrcnn/coco.py): images, boxes and labels from tensorflow-datasets' coco/2017,
instance masks rasterised by pycocotools from COCO's instances_{train,val}2017.json
(`data.annotations_dir`; tfds keeps no segmentation), looked up by annotation id. Tested on
tfds mock data only (tests/test_maskrcnn_coco.py); the reader is a host Python loop (PIL resize,
pycocotools masks) whose throughput is not measured, and an eval batch carries its ground-truth
masks at the bucket size (8 x 100 x 1344 x 1344 uint8, 1.4 GB).

    tpubench run maskrcnn --config=full --workdir=DIR --config.data.dir=TFDS_DIR \
        --config.data.annotations_dir=COCO_DIR/annotations
    tpubench fit maskrcnn --config=full --topology=v4:2x2x1
    tpubench run maskrcnn --config=full --config.data.source=synthetic

Measured: not run to target (needs COCO with masks and an accelerator). `tpubench fit maskrcnn
--config=full --topology=v4:2x2x1` was started on the shared 2-core CPU host (libtpu
compile-only devices) and had not finished compiling after 25 minutes (killed by its timeout,
no report): no memory or roofline figures yet. Rerun 2026-12-02 (session c, with
ALLOW_MULTIPLE_LIBTPU_LOAD=1: another fit held libtpu's lockfile): killed by its 36-minute
timeout, still compiling, after at least 20 min of CPU (12:14 of CPU at 23 min, 20:10 at 29 min,
by ps; load average falling from 15 to 4): again no report. SSD's full fit needed 1,066 s of CPU.
Why (session 2026-12-02d, issue 13; no compile, tracing only: `JAX_PLATFORMS=cpu python
benchmarks/hlo_size.py maskrcnn full`, and `... ssd full` beside it): the program is not large.
One train step (K=1) lowers to 8,800 StableHLO lines (SSD full: 6,807), the eval step to 3,887
(SSD: 1,299), in 17 s and 10 s of tracing. No Python loop is unrolled but the backbone's blocks
(as in SSD) and the five FPN levels: the train step holds 10 while loops (the five levels'
greedy RPN NMS, 2,000 iterations each (1,323 on P6), each carrying its [16, 2000, 2000] float32
IoU matrix, and five threefry RNG loops), 5 sorts, 45 gathers, 11 scatters, 221 convolutions;
the eval step 6 while loops. What is large is the arrays (elements per global batch of 16; a
v4:2x2x1 data shard holds a quarter): RoIAlign's four-corner gathers, [16, 4, 512, 14, 14, 256]
for the box pooler and [16, 4, 128, 28, 28, 256] for the mask pooler, 1.64e9 float32 elements
(6.6 GB) each, and their scatter-add transposes in the backward pass; the RPN matcher's IoU of
100 ground-truth rows against 451,143 anchors, [16, 100, 451143, 2] (1.44e9); the flattened FPN
maps [16, 149940, 256].
Session 2026-12-02e (issue 13): each heavy part compiled ALONE for v4:2x2x1 (the global batch
of 16 sharded over the 4 devices), `JAX_PLATFORMS=cpu python benchmarks/maskrcnn_compile_parts.py
v4:2x2x1 [--config.data.image_size=256]`, on the shared host at a load average of 12-17 (wall
seconds; CPU seconds of the process where measured; XLA temporaries per device):
    part (old code)                    image 256                image 1344
    box_pool (RoIAlign 512 RoIs + grad)  253.0 s, 5.24 GiB        not measured (stopped)
    mask_pool (128 RoIs + grad)          194.5 s, 5.18 GiB        not measured
    proposals (top-k + 5 greedy NMS)     102.7 s, 5.73 GiB        300.5 s (39.4 CPU), 5.74 GiB
    rpn_targets (matcher + sampler)       59.6 s, 0.00 GiB        193.7 s (27.5 CPU), 2.02 GiB
So no one part needs the 20+ CPU minutes the whole fit took: at most a minute of CPU each.
Two were restructured with the same numerics (tests/test_maskrcnn_parts.py and
tests/test_detection.py compare them with the old formulations): RoIAlign is one gather of a
[2ns, 2ns] grid of taps per box contracted by two interpolation matrices (no [4, R, ns, ns, C]
weighted product; tpubench/detection/roi_align.py), and the RPN's greedy NMS carries two [K]
bool rows instead of the [K, K] IoU matrix (tpubench/detection/nms.py). The parts were not
re-timed after the change (the host's CPU went to the full fit below).
The whole fit with them, `tpubench fit maskrcnn --config=full --topology=v4:2x2x1` (niced, at a
load average of 10-17 from five other runs), FINISHED: exit 0 in 78.7 wall minutes, 1,488 s of
user CPU (/usr/bin/time -v; peak RSS 20.8 GB); it printed: AOT compile (train block + eval step)
4,357.6 s wall; train block per device: arguments 0.756 GiB, outputs 0.332 (aliased 0.332),
temps 10.372, code 0.369 -> 11.497 GiB; eval step: 0.561 / 0.353 / 1.898 / 0.123 -> 2.934 GiB;
per step per device 9.449 TFLOP, 187.811 GB accessed; roofline step >= 156.509 ms (275 TFLOP/s,
1,200 GB/s: memory bound) -> at most 102 examples/s; FITS: 11.50 of 32 GiB HBM (36%). Not
measured: the old code's fit to the end (session c: 20+ CPU minutes, unfinished), so the
change's share in finishing is not separated from the lighter load; the parts after the change.
"""

import ml_collections

from tpubench.config import base_config
from tpubench.mlperf import rules

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
