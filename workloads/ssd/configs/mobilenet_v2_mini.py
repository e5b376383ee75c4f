"""SSD-MobileNet v2 (width 0.35, first conv at stride 1) on the canvas digits of
configs/mini.py, same anchors (8x8, 4x4, 2x2, 1x1 maps, 340 boxes), warmup, decays and budget;
a lower learning rate and batch-norm momentum 0.9 (below). NOT an MLPerf result.

    tpubench run ssd --config=mobilenet_v2_mini --workdir=DIR
    tpubench infer ssd --config=mobilenet_v2_mini --scenario=Offline --mode=accuracy \\
        --params=DIR --workdir=OUT

Target: mAP 0.52 (the ResNet mini's), reached by seed 0 at step 1,125, the first eval after
the lr decay at step 1,000. The strongest trivial detector on the same 500 eval canvases scores
0.4763 (benchmarks/ssd_baselines.py): the target sits 4.4 points above it and below every
post-decay eval of the measured run (.5354 .5463 .5502 .5519 at steps 1,125-1,500; the ResNet
mini plateaus at .555-.558). Seed 1 (session 2026-12-02e,
`tpubench run ssd --config=mobilenet_v2_mini --config.eval.target_value=0.99
--config.run.seed=1`, stopped once by SIGTERM at step 271 and resumed by the same command)
reaches it at step 1,125 too: .0329 .0605 .2344 .0088 .3530 .3749 .4112 .3937 | .5353 .5415
.5492 .5485 (its own dip at step 500, the train loss falling smoothly: mean per 125 steps 3.97
there after 4.36).
Measured (JAX CPU, the 2-core machine shared with other jobs at load ~6-18; steps, not times,
are the measurement):
- with the depthwise convs as grouped convs (`model.depthwise_impl=conv`): stopped before its
  first eval (step 125). One depthwise layer's forward + backward (batch 32, 64x64x48) ran
  about 5x longer as a grouped conv than as shifts, timed in one process on the loaded
  machine (a ratio, not a speed): hence "shifts" here.
- Batch-norm momentum (session 2026-12-02b). At Keras's 0.999 (the full configs'
  `model.bn_momentum`) the running statistics are still 0.999^125 = 88% their init at the
  first eval. Seed 0 trained 125 steps at 0.999 (the procedure of
  benchmarks/ssd_bn_probe.py, run from a scratch copy): eval mode mAP 0.0001; the same
  weights with the eval batch's statistics (train-mode BN) 0.0393, and with the running
  statistics recomputed on 256 fresh train canvases 0.0390; train- vs eval-mode class logits
  on a train batch differed by 93% (relative L2 norm). Hence `model.bn_momentum = 0.9` here
  (the ResNet mini's, torch's default), which tests/test_ssd_mobilenet.py checks reaches every
  batch norm.
- Learning rate (session 2026-12-02c). At the ResNet mini's 0.05 (and momentum 0.9), seed 0:
  mAP 0.0032 at step 125, 0.0007 at step 250; train loss (metrics.jsonl) stalled at ~6-7 and
  spiked: 14.0 at step 161, 23.5 at 179, 43.6 at 182, 68.1 at 185, 41.2 at 230 (session
  2026-12-02b). At 0.02 (same 100 warmup steps), seed 0, the run below: no spike (the largest
  train loss after step 125 is 6.55), mAP 0.0412 at step 125 and 0.1467 at step 250
  (reproduced to the digit by a second run with the old decays: the two configs agree up to
  step 625). Hence 0.02.
- Schedule, first try: decays at epochs 5 and 6 and a 7-epoch budget (875 steps), seed 0,
  mAP at the evals every 125 steps: .0412 .1467 .0288 .2764 .3666 .4485 .4547
  (3,086 s on the clock at load ~6-18; session 2026-12-02c). Mean train loss per epoch 9.55
  5.34 4.44 3.84 3.46 3.01 2.81: still falling when the lr dropped.
- Schedule, this config (session 2026-12-02d): the ResNet mini's decays at epochs 8 and 10
  (steps 1,000 and 1,250) and 1,500-step budget, at lr 0.02. Seed 0,
  `tpubench run ssd --config=mobilenet_v2_mini --config.eval.target_value=0.99`, mAP at the
  evals every 125 steps (steps 125 ... 1,500):
      .0412 .1467 .0288 .2764 .3666 .0530 .3158 .3889 | .5354 .5463 .5502 .5519
  (| = the first decay). Steps 1-250 are the step-250 checkpoint of the session-c run with
  these lr and decays (`/tmp/mob_v2_lr02`), resumed under this config: its train loss at
  steps 251-375 and its step-375 mAP equal the uninterrupted 875-step run's bit for bit (the
  two schedules agree until step 625), so the curve is one run's. Steps 376-1,125 (750
  steps, 6 evals) took 2,975 s at load ~10-13 (steps, not times, are the measurement). The
  dips at steps 375 and 750 (.0288, .0530) come with a smoothly falling train loss (mean per
  25 steps 4.21 -> 4.19 and 3.26 -> 3.15 around them): not investigated (the ResNet mini's
  curve dips too at its lr: .318 -> .239, .369 -> .220).
1,340,336 parameters.
"""

import ml_collections

from workloads.ssd.configs import mini

TARGET = 0.52  # measured: seeds 0 and 1 reach it at step 1,125 (above); baseline 0.4763


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    c.model.backbone = "mobilenet_v2"
    c.model.width = 0.35
    c.model.stem_stride = 1  # 64x64 canvases: taps at 8x8 and 4x4, as the ResNet mini's maps
    c.model.head_kernel = 3
    c.model.extras = ((32, 64, 2, -1), (32, 64, 2, -1))
    c.model.depthwise_impl = "shifts"  # XLA:CPU grouped convs are slow (mobilenet.py)
    c.model.checkpoint = ""  # as configs/mobilenet_v1.py (workloads/ssd/convert_mobilenet.py)
    # Not Keras's 0.999 (the full configs'): at 0.999 the running statistics are still 88% their
    # init at the first eval (step 125), so eval mode sees another network (measured above).
    c.model.bn_momentum = 0.9
    # lr 0.02, not the ResNet mini's 0.05 (measured above: at 0.05 the loss spikes and mAP stays
    # ~0; at 0.02 no spike); the ResNet mini's decays at epochs 8 and 10 and 12-epoch budget
    # (mini.py's; decays at epochs 5 and 6 stopped at 0.4547, below the 0.4763 baseline).
    c.optimizer.learning_rate = 0.02
    c.eval.target_value = TARGET
    return c
