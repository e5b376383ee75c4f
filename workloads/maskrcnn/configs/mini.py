"""Mask R-CNN (same model code: a bottleneck ResNet of one block per stage, 16-64 wide, FPN 64)
on canvas digits with instance masks: 64x64 canvases with 1-4 real MNIST-5k glyphs, exact boxes
and each glyph's own ink pixels as its mask, 10 classes + background, fresh canvases every step;
eval on 500 fixed canvases of the held-out glyphs (the SSD mini's). NOT an MLPerf result.

    tpubench run maskrcnn --config=mini --workdir=DIR     # needs pip install -e '.[detection]'

Anchors 2 x stride (8 ... 128 px), RoI level mapper's canonical scale 56; no pretrained
backbone. Mask loss weighted x4 (`model.mask_loss_weight`; 1.0 in the reference), lr 0.02 to
step 1,250 (`schedule.decay_steps` (1250, 1450)), budget 1,500 steps. Masks pasted
`eval.mask_paste = "aligned"` (tpubench/detection/masks.py).

Baselines on the same 500 eval canvases, same pycocotools AP (baselines/maskrcnn.py):
each connected ink component as box and mask, every class at its train frequency: BBOX 0.0596,
SEGM 0.0676; the same components classified by their nearest train glyph: BBOX 0.4763, SEGM
0.4982, the strongest.

Target: BBOX 0.53 AND SEGM 0.53 (+.054 / +.032 over the strongest baseline), reached by two
seeds, both only at step 1,500 (the budget's last eval: no eval of slack). Measured (session
2026-12-02f, all 500 eval canvases, `tpubench run maskrcnn --config=mini --workdir=DIR
--config.run.seed=S` with the targets out of reach):
    step              250    500    750  1,000  1,250  1,500
    seed 0 BBOX      .084   .271   .388   .448   .463   .550
    seed 0 SEGM      .093   .293   .415   .463   .471   .544
    seed 1 BBOX                           .485   .496   .570
    seed 1 SEGM                           .480   .508   .573
Wall time: seed 1's 1,500 steps took 2,993 s of training at a load average of 7-12 (not a speed
figure). The earlier configs (32 wide, decays at 1,000 / 1,250, mask weight 1 and 8), the mask
diagnosis and the paste fix: workloads/maskrcnn/README.md.
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
