"""One train step and one eval of a tiny U-Net on 16^3 MNI crops (tests).

    tpubench run unet3d --config=smoke --workdir=DIR

Expected: status "aborted" after 1 step (the budget), in seconds.
"""

import ml_collections

from workloads.unet3d.configs import mini


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    c.model.update({"base_features": 4, "max_features": 8, "num_pools": 2})
    c.data.crop_size = 16
    c.data.train_shape = (16, 16, 16)
    c.data.eval_shape = (16, 16, 16)
    c.data.global_batch_size = 2
    c.data.train_samples = 2
    c.eval.samples = 8
    c.eval.batch_size = 8
    c.eval.every_samples = 2
    c.run.max_train_samples = 2
    c.schedule.train_steps = 1
    return c
