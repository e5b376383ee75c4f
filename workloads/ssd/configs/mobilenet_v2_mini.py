"""SSD-MobileNet v2 (width 0.35, first conv at stride 1) on the canvas digits of
configs/mini.py, same anchors (8x8, 4x4, 2x2, 1x1 maps, 340 boxes), warmup, decays and budget;
a lower learning rate (0.02) and batch-norm momentum 0.9. NOT an MLPerf result.

    tpubench run ssd --config=mobilenet_v2_mini --workdir=DIR
    tpubench infer ssd --config=mobilenet_v2_mini --scenario=Offline --mode=accuracy \
        --params=DIR --workdir=OUT

Target: mAP 0.52 (the ResNet mini's), reached by seeds 0 and 1 at step 1,125, the first eval
after the lr decay at step 1,000. The strongest trivial detector on the same 500 eval canvases
scores 0.4763 (baselines/ssd.py). 1,340,336 parameters. Depthwise convolutions as
shifts (`model.depthwise_impl`): as grouped convs a layer ran about 5x longer on CPU.
Measured (JAX CPU, the 2-core machine shared with other jobs at load ~6-18; steps, not times,
are the measurement), mAP at the evals every 125 steps (steps 125 ... 1,500; | = the first
decay):
  seed 0 (session 2026-12-02d, `--config.eval.target_value=0.99`):
      .0412 .1467 .0288 .2764 .3666 .0530 .3158 .3889 | .5354 .5463 .5502 .5519
  seed 1 (session 2026-12-02e, `--config.eval.target_value=0.99 --config.run.seed=1`):
      .0329 .0605 .2344 .0088 .3530 .3749 .4112 .3937 | .5353 .5415 .5492 .5485
The dips (steps 375 and 750 on seed 0, 500 on seed 1) come with a smoothly falling train loss
(not investigated). Why batch-norm momentum 0.9 and lr 0.02 (Keras's 0.999 collapsed the eval;
lr 0.05 spiked the loss) and the first schedule tried: workloads/ssd/README.md.
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
