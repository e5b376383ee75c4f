"""Mask R-CNN (same model code: a bottleneck ResNet of one block per stage, 16-64 wide, FPN 32)
on canvas digits with instance masks: 64x64 canvases with 1-4 real MNIST-5k glyphs, exact boxes
and each glyph's own ink pixels as its mask, 10 classes + background, fresh canvases every step;
eval on 500 fixed canvases of the held-out glyphs (the SSD mini's). NOT an MLPerf result.

    tpubench run maskrcnn --config=mini --workdir=DIR

Anchors 2 x stride (8 ... 128 px; the reference's are 8 x stride on 800-1333 px images) and the
RoI level mapper's canonical scale 224 / 4 = 56 to match; no pretrained backbone, so nothing is
frozen and the batch-norm affines train (plain per-channel affines: there is no normalisation).

Trivial segmenters on the same 500 eval canvases, same pycocotools AP
(benchmarks/maskrcnn_baselines.py): each connected ink component as box and mask, every class
at its train frequency: BBOX 0.0596, SEGM 0.0676; the same components classified by their
nearest train glyph: BBOX 0.4763, SEGM 0.4982, the strongest.

Mask paste: `eval.mask_paste = "aligned"` (tpubench/detection/masks.py). The reference's paste
reads boxes as inclusive and lands half a pixel up-left of this suite's mask targets: fed the
ground truth as detections (28 x 28 box cells as masks), the eval scored BBOX 1.0 but SEGM 0.42
(first 100 eval canvases); with the aligned paste SEGM 0.9988. That bug cost about 0.14 SEGM
below; the BBOX 0.006 / SEGM 0.000 of the earlier run were an early stop (step 125).

Target: NOT CHOSEN YET (0.5 / 0.5 are placeholders): no run has passed the SEGM baseline.
Measured (issue 13, seed 0 only, `tpubench run maskrcnn --config=mini` with targets out of
reach and `eval.samples=200` (the first 200 eval canvases), an eval every 250 steps; JAX CPU,
the shared 2-core machine):
  (a) this config's schedule (lr 0.02 to step 3,000), stopped at step 1,500 (session
      2026-12-02b; the aligned-paste SEGM re-scored from the run's checkpoints);
  (b) decay brought forward (session 2026-12-02c), stopped by SIGTERM at step 1,349 (its
      checkpoint) to free the CPU:
        tpubench run maskrcnn --config=mini --workdir=DIR --config.run.seed=0 \
          --config.eval.samples=200 --config.eval.every_samples=2000 \
          --config.schedule.decay_steps="(1000,1250)" --config.run.max_train_samples=12000 \
          --config.eval.target_values.BBOX=2.0 --config.eval.target_values.SEGM=2.0 \
          --config.eval.target_value=2.0
    step              250    500    750   1000   1250   1349   1500
    (a) BBOX         .078   .239   .360   .414   .459      -   .513
    (a) SEGM aligned    -      -   .301   .377   .424      -   .436
    (b) BBOX         .078   .239   .360   .409   .513   .513      -
    (b) SEGM          .050   .216   .301   .373   .446   .440      -
Steps 250-750 of (a) and (b) agree to the digit (same seed, same lr). The decay at 1,000 buys
BBOX +.10 in 250 steps (the level (a) reached at 1,500) and SEGM +.07, then nothing more at lr
0.0002. Baselines on the same 200 canvases: ink components + 1-NN BBOX 0.4678, SEGM 0.4873:
BBOX passes, SEGM does not (.446 at best).
Where SEGM is lost (benchmarks/maskrcnn_mask_diagnosis.py on (b)'s step-1,349 checkpoint, the
same 200 canvases): scored as the run scores it BBOX .5129, SEGM .4400; with each detection's
mask replaced by the ground truth of its best-overlapping object (box IoU >= 0.5) cropped to the
DETECTED box at 28 x 28, SEGM .7489. So neither the boxes nor the 28 x 28 resolution nor the
paste caps SEGM below the baseline: the mask head's predictions do. Our reading, not tested:
it is under-trained (it learns from the positive RoIs only, 12 per image at steps 1,000-1,349,
and its loss was still 0.26 / 0.255 averaged over steps 1,000-1,099 / 1,250-1,348).
Next: longer training at lr 0.02 before the decay (the decay at 1,000 cut (a)'s rise short),
or a larger mask loss weight (not the reference's), on seeds 0 and 1; then the targets and the
step-bounded test. Wall time: 250 steps took 7.8-8.5 min at a load average of 14-18 on 2
cores (not a speed figure).
"""

import ml_collections

from workloads.maskrcnn.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.is_mlperf = False
    c.submission.division = "open"
    c.data.dataset = "canvas_digits"
    c.data.source = "canvas"
    c.data.image_size = 64
    c.data.min_image_size = 64
    c.data.max_image_size = 64
    c.data.image_channels = 1
    c.data.max_boxes = 8
    c.data.gt_mask_size = 32
    c.data.canvas_min_objects = 1
    c.data.canvas_max_objects = 4
    c.data.canvas_min_glyph = 14
    c.data.canvas_max_glyph = 30
    c.data.train_samples = 4000
    c.eval.samples = 500
    c.data.global_batch_size = 8
    c.eval.batch_size = 100
    c.model.num_classes = 11
    c.model.stage_sizes = (1, 1, 1, 1)
    c.model.widths = (8, 16, 32, 64)
    c.model.stem_width = 16
    c.model.freeze_at = 0
    c.model.frozen_bn = False
    c.model.fpn_channels = 32
    c.model.mlp_dim = 128
    c.model.mask_convs = (32, 32, 32, 32)
    c.model.anchor_sizes = (8, 16, 32, 64, 128)
    c.model.rpn.update({"fpn_post_nms_test": 100})
    c.model.roi.update({"batch": 64, "canonical_scale": 56.0})
    c.model.dtype = "float32"
    c.optimizer.learning_rate = 0.02
    c.schedule.warmup_steps = 100
    c.schedule.decay_steps = (3000, 4000)
    c.eval.max_per_class = 20
    c.eval.max_detections = 20
    c.eval.mask_paste = "aligned"  # the reference's paste is half a pixel off: 1-2 px strokes
    c.eval.target_values = ml_collections.ConfigDict({"BBOX": 0.5, "SEGM": 0.5})
    c.eval.target_value = c.eval.target_values.BBOX
    c.eval.target_provisional = True  # not converged yet (see above)
    c.eval.every_samples = c.data.train_samples // 4  # every 125 steps
    c.run.max_train_samples = 5000 * c.data.global_batch_size
    c.run.steps_per_dispatch = 1
    return c
