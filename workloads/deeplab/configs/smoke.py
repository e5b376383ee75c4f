"""One train step and one eval of a tiny DeepLabv3+ on 8 canvas-digit images (tests).

    tpubench run deeplab --config=smoke --workdir=DIR

Expected: status "aborted" after 1 step (the budget), in seconds.
"""

import ml_collections

from workloads.deeplab.configs import mini


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    # grouped-conv depthwise: compiles in half the time of the shifts (49.6 s against 103.0 s
    # for the train step's gradient at load ~12), and this config runs one step
    c.model.update({"width": 0.1, "aspp_filters": 8, "decoder_filters": 8,
                    "projection_filters": 8, "depthwise_impl": "conv"})
    c.data.image_size = 32
    c.data.canvas_min_glyph = 10
    c.data.canvas_max_glyph = 16
    c.data.global_batch_size = 2
    c.data.train_samples = 2
    c.eval.samples = 8
    c.eval.batch_size = 8
    c.eval.every_samples = 2
    c.run.max_train_samples = 2
    c.schedule.train_steps = 1
    return c
