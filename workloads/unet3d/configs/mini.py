"""The same nnU-Net code, small (features 8, 16, 32; 2 stride-2 stages), on 16^3 crops (32 mm)
of the MNI ICBM152 template at 2 mm (PyPI package `nilearn`; workloads/unet3d/mni.py): segment
4 classes (outside, other brain tissue, grey matter, white matter) from the T1 volume; mean Dice
over the three tissue classes, per crop, as the v0.7 accuracy script averages BraTS's regions.
Train crops: random, flipped, in the posterior half (y < 60 of 116); eval: 44 fixed 16^3 tiles
every 16 voxels of the anterior half (y >= 60), sharing no voxel with any training crop. Every
crop carries a random bias field and noise (mni.py says why). NOT an MLPerf result.

    tpubench run unet3d --config=mini --workdir=DIR     # needs pip install -e '.[medical]'

Baselines (baselines/unet3d.py, the same 44 eval tiles and Dice): majority tissue
0.2532; intensity thresholds (tree, 8 leaves) 0.4632; intensity + 3^3/5^3/9^3 box means,
gradient-boosted trees 0.6233 (the strongest).

Measured (session 2026-12-02c, with --config.eval.target_value=0.99 to see the whole 1,000-step
poly schedule; repeatable on one machine; shared 2-core CPU at load ~15): both seeds plateau
from step ~600 at 0.58-0.65, noisy (up to 0.06 from one eval to the next). Target 0.63, chosen
from these curves: reached at step 775 (seed 0) and step 750 (seed 1). Far above the trivial
baselines but only 0.007 above the gradient-boosted trees: at this size the network segments
about as well as those trees, not clearly better. 1,000 steps took 3,110 and 3,087 s on the 2
cores at load ~15, so its step-bounded test (tests/test_unet3d.py) runs only with --extended.
The per-eval curves and the earlier crop sizes: workloads/unet3d/README.md.
"""

import ml_collections

from workloads.unet3d.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.submission.division = "open"
    c.model.update({"num_classes": 4, "base_features": 8, "max_features": 64, "num_pools": 2,
                    "deep_supervision": True, "dtype": "float32"})
    c.data.dataset = "mni_icbm152_2009a"
    c.data.source = "mni"
    c.data.in_channels = 1
    c.data.crop_size = 16
    c.data.train_shape = (16, 16, 16)
    c.data.eval_shape = (16, 16, 16)
    c.data.eval_tile_stride = 16  # mni.eval_corners: 44 tiles, the last flush with the edge
    c.data.global_batch_size = 4
    c.data.train_samples = 100 * 4  # an "epoch" of 100 steps (the crops are drawn afresh)
    c.eval.samples = 44
    c.eval.batch_size = 44
    c.eval.regions = "classes"
    c.eval.class_names = ("outside", "other brain tissue", "grey matter", "white matter")
    c.eval.target_value = 0.63  # measured: steps 775 / 750 on seeds 0 / 1 (see above)
    c.eval.every_samples = 25 * 4
    c.optimizer.update({"learning_rate": 0.01, "momentum": 0.99, "weight_decay": 3e-5,
                        "clip_norm": 12.0})
    c.schedule.train_steps = 1000
    c.run.max_train_samples = 1000 * 4
    c.run.steps_per_dispatch = 1  # XLA:CPU runs convs in a lax.scan slowly (benchmarks/README)
    return c
