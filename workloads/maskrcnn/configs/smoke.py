"""One train step and one eval step of a tiny Mask R-CNN on synthetic data (tests; any source).

    tpubench run maskrcnn --config=smoke --workdir=DIR
    ... --config.data.source=canvas   # the canvas-digits code path

Expected: status "aborted" after 1 step (the budget), box and mask AP ~0.
"""

import ml_collections

from workloads.maskrcnn.configs import mini


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    c.data.dataset = "synthetic"
    c.data.source = "synthetic"
    c.data.global_batch_size = 2
    c.eval.batch_size = 2
    c.data.train_samples = 2
    c.eval.samples = 2
    c.model.widths = (4, 4, 8, 8)
    c.model.stem_width = 8
    c.model.fpn_channels = 8
    c.model.mlp_dim = 16
    c.model.mask_convs = (8, 8, 8, 8)
    c.model.rpn.update({"pre_nms_train": 64, "post_nms_train": 32, "fpn_post_nms_train": 64,
                        "pre_nms_test": 64, "post_nms_test": 32, "fpn_post_nms_test": 32})
    c.model.roi.update({"batch": 16})
    c.eval.every_samples = 2
    c.run.max_train_samples = 2
    c.schedule.warmup_steps = 0
    c.schedule.decay_steps = ()
    return c
