"""One train step and one eval step of a tiny ResNet on synthetic data (tests; any source).

    python -m workloads.resnet.main --config=workloads/resnet/configs/smoke.py --workdir=DIR
    ... --config.data.source=tfds   # the real ImageNet tfds code path (tests: tfds mock_data)

Expected: status "aborted" after 1 step (the budget), in a few seconds.
"""

import ml_collections

from workloads.resnet.configs import mini


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    c.data.dataset = "synthetic"
    c.data.source = "synthetic"
    c.data.image_size = 32
    c.data.image_channels = 3
    c.data.global_batch_size = 8
    c.eval.batch_size = 8
    c.data.train_samples = 8
    c.eval.samples = 8
    c.model.num_filters = 8
    c.data.random_shift_pixels = 0  # any source, ImageNet's tfds path included
    c.eval.every_samples = 8
    c.run.max_train_samples = 8
    c.run.steps_per_dispatch = 1
    c.schedule.train_steps = 1
    c.schedule.warmup_steps = 0
    return c
