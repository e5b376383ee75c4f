"""SSD (same model code: ResNet blocks (1, 1, 1) of 16/32/64 filters, three extra blocks) on
canvas digits: 64x64 canvases with 1-4 real MNIST-5k glyphs (14-30 px tall) each, exact ink
boxes, 10 classes + background, fresh canvases every step from the 4,000 train glyphs; eval on
500 fixed canvases of the 1,000 held-out glyphs (tpubench/detection/canvas.py). NOT an MLPerf
result.

    tpubench run ssd --config=mini --workdir=DIR
    python -m workloads.ssd.main --config=workloads/ssd/configs/mini.py --workdir=DIR

Default boxes: 4 per cell on 8x8, 4x4, 2x2, 1x1 maps (340 boxes), scales 10-60 px.
Baselines and target: see the end of this docstring (benchmarks/ssd_baselines.py).
"""

import ml_collections

from workloads.ssd.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.is_mlperf = False
    c.submission.division = "open"
    c.data.dataset = "canvas_digits"
    c.data.source = "canvas"
    c.data.image_size = 64
    c.data.image_channels = 1
    c.data.max_boxes = 8
    c.data.canvas_min_objects = 1
    c.data.canvas_max_objects = 4
    c.data.canvas_min_glyph = 14
    c.data.canvas_max_glyph = 30
    c.data.train_samples = 4000  # one "epoch": as many canvases as train glyphs
    c.eval.samples = 500
    c.data.global_batch_size = 32
    c.eval.batch_size = 250
    c.model.num_classes = 11
    c.model.stage_sizes = (1, 1, 1)
    c.model.widths = (16, 32, 64)
    c.model.extras = ((32, 64, 2, 1), (32, 64, 2, 1), (32, 64, 2, 1))
    c.model.anchors = ml_collections.ConfigDict({
        "feat_size": (8, 4, 2, 1), "steps": (8, 16, 32, 64), "scales": (10, 20, 32, 46, 60),
        "aspect_ratios": ((2,), (2,), (2,), (2,))})
    c.optimizer.update({"name": "sgd", "learning_rate": 0.05, "momentum": 0.9,
                        "weight_decay": 5e-4})
    c.schedule.warmup_factor = 0
    full.set_schedule(c, warmup_epochs=0.8, decay_epochs=(8, 10))  # 100 warmup steps
    c.eval.max_per_class = 50
    c.eval.max_detections = 100
    c.eval.target_value = 0.5
    c.eval.offset_samples = 0
    c.eval.every_samples = c.data.train_samples
    c.run.max_train_samples = 12 * c.data.train_samples
    c.run.steps_per_dispatch = 1  # conv nets on XLA:CPU: no lax.scan (resnet mini's note)
    c.model.dtype = "float32"
    return c
