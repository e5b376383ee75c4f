"""A narrow DeepLabv3+ MobileNetV2 (width 0.35, head 64 / 64 / 16 filters, shifts depthwise) on
canvas digits with a class per pixel (background + 10 digits; workloads/deeplab/input_pipeline.py):
mean IoU over the 11 classes on the 500 fixed held-out canvases. NOT an MLPerf result.

    tpubench run deeplab --config=mini --workdir=DIR

Baselines (benchmarks/deeplab_baselines.py, the same 500 eval canvases and mIoU): all
background 0.0808; ink pixels labelled with the most frequent train digit 0.1037; ink
components labelled by the nearest train glyph (1-NN on 16x16 crops) 0.5172 (the strongest:
background IoU 1.0, digits 0.34-0.62).

Measured (session 2026-12-02e, shared 2-core CPU at load ~13-15, ~1 s a step), mIoU every 50
steps from step 50; each run with --config.eval.target_value=0.99 to see the whole curve:

  seed 0, this config (output stride 8, Adam lr 5e-3):
    tpubench run deeplab --config=mini --workdir=DIR --config.eval.target_value=0.99
        --config.model.output_stride=8 --config.optimizer.learning_rate=5e-3
    0.0808 (steps 50-250: all background) 0.0901 0.1050 0.1379 0.2284 0.2329 0.2857 0.2646
    0.2733 0.3785 0.3689 0.3797 0.4411 0.4004 0.5120 0.4999 0.5264 0.4931 0.5414 0.5496
    0.5620 (step 1,250: the target) 0.5525 0.5697 0.5838 0.5737 0.5873 (step 1,500)
  seed 1, this config as committed (stops at the target):
    tpubench run deeplab --config=mini --workdir=DIR --config.run.seed=1
    0.0808 (steps 50-250) 0.0841 0.0975 0.1286 0.2003 0.2366 0.2814 0.3153 0.3783 0.3940
    0.4115 0.4433 0.4270 0.4496 0.4452 0.4930 0.4892 0.5083 0.5431 0.5473 0.5337
    0.5704 (step 1,300: success; 1,268 s to target, init 55 s from the compilation cache)

  before (session 2026-12-02d), seed 0, output stride 16, lr 2e-3 (the previous config):
    0.0808 (steps 50-650: every pixel predicted background) 0.0840 0.0877 0.0982 0.1084 0.1101
    0.1226 0.1338 0.1400 0.1390 0.1541 0.1701 0.1753 0.1857 0.1824 0.1970 0.1993 0.2019
    Train loss ~0.3 from step ~150 (pixel accuracy ~0.89, the background share). A stride-1
    stem (decoder at stride 2) was tried for 100 steps: the same loss and all-background
    mIoU, 4.5x slower a step (2.9 s).

Output stride 8 (slim's atrous rule from the 1/16 stage on: 8x8 features at 64 px; the mobile
reference uses 16) and lr 5e-3 were changed together, so their shares are not separated. The
decoder map stays 16x16 (stride 4): free per-image logits at that stride, fitted to 200 eval
label maps and bilinearly upsampled, reach mIoU 0.8664 (`python benchmarks/deeplab_baselines.py
--decoder-ceiling`), so the map size is not what held the old run back.
Target 0.55: the 1-NN baseline 0.5172 + 0.033.
"""

import ml_collections

from workloads.deeplab.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.model.update({"num_classes": 11, "width": 0.35, "output_stride": 8, "aspp_filters": 64,
                    "decoder_filters": 64, "projection_filters": 16, "depthwise_impl": "shifts",
                    "backbone_bn_momentum": 0.9, "head_bn_momentum": 0.9})
    c.data.dataset = "canvas_digits"
    c.data.source = "canvas"
    c.data.uint8_pixels = False  # canvases are float in [0, 1]
    c.data.image_size = 64
    c.data.image_channels = 1
    c.data.canvas_min_objects = 1
    c.data.canvas_max_objects = 4
    c.data.canvas_min_glyph = 14
    c.data.canvas_max_glyph = 30
    c.data.global_batch_size = 16
    c.data.train_samples = 4000
    c.eval.samples = 500
    c.eval.batch_size = 100
    c.eval.ignore_label = -1  # every pixel counts, background included
    c.eval.target_value = 0.55  # the 1-NN baseline 0.5172 + 0.033; seed 0: step 1,250
    c.eval.target_provisional = False
    c.eval.every_samples = 50 * 16
    c.optimizer.update({"learning_rate": 5e-3, "weight_decay": 0.0})
    c.schedule.train_steps = 1500
    c.run.max_train_samples = 1500 * 16
    c.run.steps_per_dispatch = 1
    return c
