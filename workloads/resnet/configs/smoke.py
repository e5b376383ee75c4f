"""One train step and one eval step of a tiny ResNet on synthetic data (tests; any source).

    python -m workloads.resnet.main --config=workloads/resnet/configs/smoke.py --workdir=DIR
    ... --config.data_source=tfds   # the real ImageNet tfds code path (tests: tfds mock_data)

Expected: status "aborted" after 1 step (the budget), in a few seconds.
"""

import ml_collections

from workloads.resnet.configs import mini


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    c.dataset = "synthetic"
    c.data_source = "synthetic"
    c.image_size = 32
    c.image_channels = 3
    c.global_batch_size = 8
    c.eval_batch_size = 8
    c.train_samples = 8
    c.eval_samples = 8
    c.model.num_filters = 8
    c.eval_every_samples = 8
    c.max_train_samples = 8
    c.steps_per_dispatch = 1
    c.optimizer.train_epochs = 1.0
    c.optimizer.warmup_epochs = 0.0
    return c
