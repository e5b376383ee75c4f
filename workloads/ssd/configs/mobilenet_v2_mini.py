"""SSD-MobileNet v2 (width 0.35, first conv at stride 1) on the canvas digits of
configs/mini.py, same anchors (8x8, 4x4, 2x2, 1x1 maps, 340 boxes) and warmup; a lower
learning rate and earlier decays (below). NOT an MLPerf result.

    tpubench run ssd --config=mobilenet_v2_mini --workdir=DIR
    tpubench infer ssd --config=mobilenet_v2_mini --scenario=Offline --mode=accuracy \\
        --params=DIR --workdir=OUT

Target: NOT REACHED; the ResNet mini's 0.52 stays provisional. The strongest trivial detector
on the same 500 eval canvases scores 0.4763 (benchmarks/ssd_baselines.py); this config's best
measured mAP is 0.4547 (seed 0, step 875), below it. Measured (JAX CPU, the 2-core machine
shared with other jobs at load ~6-18; steps, not times, are the measurement):
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
- Schedule: the ResNet mini's decays at epochs 8 and 10 (1,500 steps) did not fit the
  session, so the decays were moved to epochs 5 and 6 and the budget to 7 epochs (875 steps):
  `tpubench run ssd --config=mobilenet_v2_mini --config.eval.target_value=0.99`, seed 0, mAP
  at the evals every 125 steps:
      .0412 .1467 .0288 .2764 .3666 .4485 .4547
  (3,086 s on the clock at load ~6-18). Mean train loss per epoch 9.55 5.34 4.44 3.84 3.46
  3.01 2.81 (class 6.89 ... 2.30, box 2.66 ... 0.51): still falling when the lr drops. The
  dip at step 375 was not investigated (the train loss fell smoothly through it); the ResNet
  mini's curve dips too at its lr (.318 -> .239, .369 -> .220).
  Seed 1 and the v1 mini were not run. Untested next step: the ResNet mini's longer schedule
  at lr 0.02 (decays at steps 1,000 and 1,250, 1,500-step budget; its steps 1-625 are the
  curve above), then a target between 0.4763 and its plateau, seed 1, and a step-bounded
  test (tests/test_ssd.py's for the ResNet mini is the pattern).
1,340,336 parameters.
"""

import ml_collections

from workloads.ssd.configs import full, mini


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
    # ~0; at 0.02 no spike), decays at epochs 5, 6 and a 7-epoch budget: the measured curve
    # (0.4547 at the end, short of the 0.4763 baseline: a longer schedule is the next step).
    c.optimizer.learning_rate = 0.02
    full.set_schedule(c, warmup_epochs=0.8, decay_epochs=(5, 6))
    c.run.max_train_samples = 7 * c.data.train_samples
    c.eval.target_provisional = True  # the SSD mini's 0.52; this model's best: 0.4547
    return c
