"""A narrow DeepLabv3+ MobileNetV2 (width 0.35, head 64 / 64 / 16 filters, shifts depthwise,
output stride 8, Adam lr 5e-3) on canvas digits with a class per pixel (background + 10 digits;
workloads/deeplab/input_pipeline.py): mean IoU over the 11 classes on the 500 fixed held-out
canvases. NOT an MLPerf result.

    tpubench run deeplab --config=mini --workdir=DIR

Baselines (baselines/deeplab.py, the same 500 eval canvases and mIoU): all
background 0.0808; ink pixels labelled with the most frequent train digit 0.1037; ink
components labelled by the nearest train glyph (1-NN on 16x16 crops) 0.5172 (the strongest).
Target 0.55: the 1-NN baseline 0.5172 + 0.033.

Measured (session 2026-12-02e, shared 2-core CPU at load ~13-15, ~1 s a step), mIoU every 50
steps: seed 0 (with --config.eval.target_value=0.99) reaches 0.5620 at step 1,250 (the target),
0.5873 at step 1,500; seed 1 (`tpubench run deeplab --config=mini --workdir=DIR
--config.run.seed=1`, stops at the target) 0.5704 at step 1,300: success, 1,268 s to target,
init 55 s from the compilation cache.
Served: seed 0's step-1,500 checkpoint in accuracy mode gives the training eval's
0.587336290005532 exactly; int8 weights (`--quantize=int8`) 0.5872.
The full curves and the previous config (output stride 16, lr 2e-3, all background for 650
steps): workloads/deeplab/README.md.
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
