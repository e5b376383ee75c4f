"""The same nnU-Net code, small (features 8..64, 3 stride-2 stages), on 32^3 crops of the MNI
ICBM152 template at 2 mm (PyPI package `nilearn`; workloads/unet3d/mni.py): segment 4 classes
(outside, other brain tissue, grey matter, white matter) from the T1 volume; mean Dice over the
three tissue classes, per crop, as the v0.7 accuracy script averages BraTS's regions. Train
crops: random, flipped, in the posterior half (y < 60 of 116); eval: 55 fixed crops of the
anterior half (y >= 60), sharing no voxel with any training crop. Every crop carries a random
bias field and noise (mni.py says why). NOT an MLPerf result.

    tpubench run unet3d --config=mini --workdir=DIR

Baselines (benchmarks/unet3d_baselines.py, the same 55 eval crops and Dice; fit on 400 training
crops): majority tissue 0.2481; intensity thresholds (tree, 8 leaves) 0.3894; intensity + 3^3/5^3/
9^3 box means, gradient-boosted trees 0.6239 (the strongest). On CLEAN crops (`--clean`) the
thresholds reach 0.9106 and the trees 0.9096 (an earlier clean variant, normalised over the whole
volume: 0.9505 / 0.9515): the plain template is solved by intensity, hence the corruption.

OPEN, NOT MEASURED: the model's convergence. The target 0.80 is provisional (above the strongest
baseline, 0.6239), not yet chosen by measurement: the two seeds started on the development VM
(load average ~28 on 2 cores) spent 627-650 s compiling and had not reached their first eval
(50 steps) 15 minutes later, so they were stopped, and the corruption was added after them. No
step-bounded slow test exists yet.
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
