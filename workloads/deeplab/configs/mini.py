"""A narrow DeepLabv3+ MobileNetV2 (width 0.35, head 64 / 64 / 16 filters, shifts depthwise) on
canvas digits with a class per pixel (background + 10 digits; workloads/deeplab/input_pipeline.py):
mean IoU over the 11 classes on the 500 fixed held-out canvases. NOT an MLPerf result.

    tpubench run deeplab --config=mini --workdir=DIR

Target and curve: PROVISIONAL (being measured).
"""

import ml_collections

from workloads.deeplab.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.model.update({"num_classes": 11, "width": 0.35, "aspp_filters": 64, "decoder_filters": 64,
                    "projection_filters": 16, "depthwise_impl": "shifts",
                    "backbone_bn_momentum": 0.9, "head_bn_momentum": 0.9})
    c.data.dataset = "canvas_digits"
    c.data.source = "canvas"
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
    c.eval.target_value = 0.9
    c.eval.target_provisional = True
    c.eval.every_samples = 50 * 16
    c.optimizer.update({"learning_rate": 2e-3, "weight_decay": 0.0})
    c.schedule.train_steps = 1500
    c.run.max_train_samples = 1500 * 16
    c.run.steps_per_dispatch = 1
    return c
