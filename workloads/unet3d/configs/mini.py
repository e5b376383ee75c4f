"""The same nnU-Net code, small (features 8..64, 3 stride-2 stages), on 32^3 crops of the MNI
ICBM152 template at 2 mm (PyPI package `nilearn`; workloads/unet3d/mni.py): segment 4 classes
(outside, other brain tissue, grey matter, white matter) from the T1 volume; mean Dice over the
three tissue classes, per crop, as the v0.7 accuracy script averages BraTS's regions. Train
crops: random, flipped, in the posterior half (y < 60 of 116); eval: 55 fixed crops of the
anterior half (y >= 60), sharing no voxel with any training crop. NOT an MLPerf result.

    tpubench run unet3d --config=mini --workdir=DIR

MEASURED: see the end of this docstring (filled in by measurement).
"""

import ml_collections

from workloads.unet3d.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.submission.division = "open"
    c.model.update({"num_classes": 4, "base_features": 8, "max_features": 64, "num_pools": 3,
                    "deep_supervision": True, "dtype": "float32"})
    c.data.dataset = "mni_icbm152_2009a"
    c.data.source = "mni"
    c.data.in_channels = 1
    c.data.crop_size = 32
    c.data.train_shape = (32, 32, 32)
    c.data.eval_shape = (32, 32, 32)
    c.data.global_batch_size = 4
    c.data.train_samples = 100 * 4  # an "epoch" of 100 steps (the crops are drawn afresh)
    c.eval.samples = 55
    c.eval.batch_size = 55
    c.eval.regions = "classes"
    c.eval.class_names = ("outside", "other brain tissue", "grey matter", "white matter")
    c.eval.target_value = 0.80
    c.eval.every_samples = 50 * 4
    c.optimizer.update({"learning_rate": 0.01, "momentum": 0.99, "weight_decay": 3e-5,
                        "clip_norm": 12.0})
    c.schedule.train_steps = 1000
    c.run.max_train_samples = 1000 * 4
    c.run.steps_per_dispatch = 1  # XLA:CPU runs convs in a lax.scan slowly (benchmarks/README)
    return c
