"""One train step and one eval step of a tiny SSD on synthetic data (tests; any source).

    tpubench run ssd --config=smoke --workdir=DIR
    ... --config.data.source=canvas   # the canvas-digits code path

Expected: status "aborted" after 1 step (the budget), mAP ~0 (random model, random boxes).
"""

import ml_collections

from workloads.ssd.configs import mini


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    c.data.dataset = "synthetic"
    c.data.source = "synthetic"
    c.data.global_batch_size = 4
    c.eval.batch_size = 4
    c.data.train_samples = 4
    c.eval.samples = 4
    c.model.widths = (8, 8, 16)
    c.model.extras = ((8, 16, 2, 1), (8, 16, 2, 1), (8, 16, 2, 1))
    c.eval.every_samples = 4
    c.run.max_train_samples = 4
    c.schedule.warmup_steps = 0
    c.schedule.decay_steps = ()
    return c
