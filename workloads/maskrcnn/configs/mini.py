"""Mask R-CNN (same model code: a bottleneck ResNet of one block per stage, 16-64 wide, FPN 64)
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

Target: BBOX 0.53 AND SEGM 0.53 (+.054 / +.032 over the strongest baseline, 0.4763 / 0.4982),
reached by two seeds, both only at step 1,500 (the budget's last eval: no eval of slack): seed 1
BBOX .5701 / SEGM .5726 ((e) below), seed 0 .5505 / .5438 ((f) below). This config since
(e): FPN and mask head 64 wide (`model.fpn_channels`, `model.mask_convs`; 32 before) and the lr
0.02 phase to step 1,250 (`schedule.decay_steps` (1250, 1450); (1000, 1250) before).
(e) (session 2026-12-02f, issue 13) Seed 1, this config, all 500 eval canvases:
      tpubench run maskrcnn --config=mini --workdir=DIR --config.run.seed=1 \
        --config.eval.target_values.BBOX=0.99 --config.eval.target_values.SEGM=0.99 \
        --config.eval.target_value=0.99
    run in two parts in one workdir: a first command meant as a 300-step probe (with
    `--config.eval.samples=100 --config.eval.every_samples=100000 --config.run.max_train_samples
    =2400`, whose one eval point, 100,000 samples, set its budget to 12,500 steps), stopped by
    SIGTERM at step 772 (its checkpoint), then resumed by the command above. lr 0.02 from step
    100 to 1,249 in both parts, and canvases drawn per (seed, step): the same steps as one run,
    but evals at 1,000 / 1,250 / 1,500 only:
    step              1000   1250   1500
    (e) BBOX          .485   .496   .570
    (e) SEGM          .480   .508   .573
    (d) BBOX          .444   .491   .496   (seed 1, the config before: decays at 1,000 / 1,250)
    (d) SEGM          .474   .493   .493
At step 1,000 both runs have had lr 0.02 since step 100 ((d) but its last step): the wider net
is ahead by BBOX +.041, SEGM +.006. The unweighted mask loss (means over 250 steps ending at
250 ... 1,500; metrics.jsonl):
    (e)   .424 .260 .239 .227 .215 .203
    (d)   .428 .263 .240 .232 .215 .215
so the width alone barely moves the mask loss (within .005 to step 1,000, and level at 1,250
where (d) has decayed and (e) has not); it falls again after (e)'s decay at 1,250 (.203, where
(d) stays at .215 after its decay). Our reading (one seed, the two changes not separated): the
width buys BBOX, the longer lr-0.02 phase before the decay buys SEGM. Wall time: 1,500 steps
in 2,993 s of training at a load average of 7-12 (not a speed figure).

(f) Seed 0, this config, an eval every 250 steps on all 500 canvases (the command of (e) with
    `--config.run.seed=0`), to its budget:
    step              250    500    750  1,000  1,250  1,500
    (f) BBOX         .084   .271   .388   .448   .463   .550
    (f) SEGM         .093   .293   .415   .463   .471   .544
    (c) BBOX         .080   .260   .361   .440   .500   (seed 0: mask x4, 32 wide, decay at 1,000)
    (c) SEGM         .087   .266   .376   .453   .499

Before (e) (sessions 2026-12-02b to e): no run had passed the SEGM baseline of the 500 eval
canvases (0.4982) by a margin, and seed 1 ((d) below) ended under it. Measured
(issue 13, seed 0 only in (a)-(c), `tpubench run maskrcnn --config=mini` with targets out of
reach, an eval every 250 steps; JAX CPU, the shared 2-core machine):
  (a) lr 0.02 to step 3,000 (the schedule before session c), stopped at step 1,500 (session
      2026-12-02b; the aligned-paste SEGM re-scored from the run's checkpoints);
  (b) decay brought forward to steps 1,000 / 1,250 (session 2026-12-02c), stopped by SIGTERM
      at step 1,349 (its checkpoint) to free the CPU:
        tpubench run maskrcnn --config=mini --workdir=DIR --config.run.seed=0 \
          --config.eval.samples=200 --config.eval.every_samples=2000 \
          --config.schedule.decay_steps="(1000,1250)" --config.run.max_train_samples=12000 \
          --config.eval.target_values.BBOX=2.0 --config.eval.target_values.SEGM=2.0 \
          --config.eval.target_value=2.0 --config.model.mask_loss_weight=1.0
  (c) as (b) with the mask loss weighted x4 (this config; session 2026-12-02d), on all 500 eval
      canvases, stopped by SIGTERM at step 1,426 (its checkpoint) to free the CPU: the command
      of (b) without `--config.eval.samples=200` and with `--config.model.mask_loss_weight=4.0`.
    step              250    500    750   1000   1250   1349   1500   (eval canvases)
    (a) BBOX         .078   .239   .360   .414   .459      -   .513   (first 200)
    (a) SEGM aligned    -      -   .301   .377   .424      -   .436   (first 200)
    (b) BBOX         .078   .239   .360   .409   .513   .513      -   (first 200)
    (b) SEGM          .050   .216   .301   .373   .446   .440      -   (first 200)
    (b) BBOX / SEGM at step 1,349:  .501 / .428                        (all 500)
    (c) BBOX         .080   .260   .361   .440   .500      -      -   (all 500)
    (c) SEGM         .087   .266   .376   .453   .499      -      -   (all 500)
    (c) BBOX / SEGM at step 1,426:  .504 / .508                        (all 500)
Steps 250-750 of (a) and (b) agree to the digit (same seed, same lr). The decay at 1,000 buys
BBOX +.10 in 250 steps (the level (a) reached at 1,500) and SEGM +.07, then nothing more at lr
0.0002. Baselines (ink components + 1-NN): BBOX 0.4678 / SEGM 0.4873 on the first 200 canvases,
0.4763 / 0.4982 on all 500. (b) passes BBOX only; (c) passes BBOX by .024 and SEGM by .0008 at
step 1,250: level with the baseline, no margin.
Where SEGM is lost (benchmarks/maskrcnn_mask_diagnosis.py on (b)'s step-1,349 checkpoint, the
first 200 canvases): scored as the run scores it BBOX .5129, SEGM .4400; with each detection's
mask replaced by the ground truth of its best-overlapping object (box IoU >= 0.5) cropped to the
DETECTED box at 28 x 28, SEGM .7489 (all 500: .5010 / .4283 / .7443). So neither the boxes nor
the 28 x 28 resolution nor the paste caps SEGM below the baseline: the mask head's predictions
do. Its loss (per-pixel binary cross-entropy, means over 100 steps) fell slowly at lr 0.02 in
(b): .304 .290 .286 .276 .274 at steps 500-999, .253-.263 after the decay; the mask weight
(`model.mask_loss_weight`, 1.0 in the reference and the full config; not the reference's here)
was the cheapest lever: in (c) the same loss (unweighted) is .285 by step 200 (where (b) was at
.406), .248-.231 at steps 500-999 and .211-.216 after the decay; its SEGM is above its BBOX from
step 500 on (in (b) .02-.07 below, on its 200 canvases), and on all 500 canvases (c) ends at
BBOX .500 / SEGM .499 (step 1,250) where (b) ends at .501 / .428 (step 1,349). Still a plateau.
Our reading, not tested: the mask head sees a glyph (14-30 px) through RoIAlign of P2 (stride 4,
32 channels; P3 for the largest boxes), while its mask is its ink pixels, which the
ink-component baseline reads off the image exactly.
(c)'s step-1,426 checkpoint (lr 0.0002 since step 1,250), all 500 canvases, by
benchmarks/maskrcnn_mask_diagnosis.py: BBOX .5044, SEGM .5077 (past the baseline by .0095),
oracle masks in its boxes .7524: still the mask head. A weight of x8 (the command of (c) with
`--config.model.mask_loss_weight=8.0`) diverged: the loss was NaN in the block ending at step
250, run aborted. Next: x4 longer at lr 0.02 before the decay (its mask loss was still falling:
.248 to .231 over steps 500-999), a wider mask head, or the weight between 4 and 8 with a longer
warmup; then seed 1, the targets (SEGM well above 0.4982) and the step-bounded test. Wall time:
250 steps took 7.8-10 min at a load average of 11-18 on 2 cores (not a speed figure).
(d) Seed 1, the config before (e) (FPN and mask head 32, decays at 1,000 / 1,250), over its
whole schedule (session 2026-12-02e, issue 13), all 500 eval canvases:
      tpubench run maskrcnn --config=mini --workdir=DIR --config.run.seed=1 \
        --config.eval.target_values.BBOX=0.99 --config.eval.target_values.SEGM=0.99 \
        --config.eval.target_value=0.99
    step              250    500    750   1000   1250   1500
    (d) BBOX         .064   .242   .352   .444   .491   .496
    (d) SEGM         .061   .261   .366   .474   .493   .493
Seed 1 tracks seed 0 ((c) above: within .02 at every eval) but ends BELOW the SEGM baseline
(.4931 at step 1,500 against 0.4982) and above the BBOX one by .020 (.4959 against 0.4763).
So no SEGM target above the baseline is reached by both seeds, and a BBOX target both reach
(0.49: seed 0 .500 and seed 1 .491 at step 1,250) is .014 above its baseline: the targets stay
provisional at 0.5 / 0.5 (seed 1 reaches neither). The mask head is still the limit (the
oracle-mask diagnosis above); widening its margin (a wider mask head, a longer lr-0.02 phase)
was not tried: seed 1 used the session's time. Both were, together, in (e) above.
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
    c.model.fpn_channels = 64  # (e) above; 32 in (a)-(d)
    c.model.mlp_dim = 128
    c.model.mask_convs = (64, 64, 64, 64)  # (e); 32 wide in (a)-(d)
    c.model.mask_loss_weight = 4.0  # not the reference's 1.0: (c) against (b) above
    c.model.anchor_sizes = (8, 16, 32, 64, 128)
    c.model.rpn.update({"fpn_post_nms_test": 100})
    c.model.roi.update({"batch": 64, "canonical_scale": 56.0})
    c.model.dtype = "float32"
    c.optimizer.learning_rate = 0.02
    c.schedule.warmup_steps = 100
    c.schedule.decay_steps = (1250, 1450)  # (e): lr 0.02 to 1,250; (1000, 1250) in (b)-(d)
    c.eval.max_per_class = 20
    c.eval.max_detections = 20
    c.eval.mask_paste = "aligned"  # the reference's paste is half a pixel off: 1-2 px strokes
    c.eval.target_values = ml_collections.ConfigDict({"BBOX": 0.53, "SEGM": 0.53})
    c.eval.target_value = c.eval.target_values.BBOX
    c.eval.target_provisional = False  # seeds 1 and 0 ((e), (f) above) reach it at step 1,500
    c.eval.every_samples = 250 * c.data.global_batch_size  # every 250 steps, as measured
    c.run.max_train_samples = 1500 * c.data.global_batch_size
    c.run.steps_per_dispatch = 1
    return c
