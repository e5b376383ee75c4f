"""The same nnU-Net code, small (features 8, 16, 32; 2 stride-2 stages), on 16^3 crops (32 mm)
of the MNI ICBM152 template at 2 mm (PyPI package `nilearn`; workloads/unet3d/mni.py): segment
4 classes (outside, other brain tissue, grey matter, white matter) from the T1 volume; mean Dice
over the three tissue classes, per crop, as the v0.7 accuracy script averages BraTS's regions.
Train crops: random, flipped, in the posterior half (y < 60 of 116); eval: 44 fixed 16^3 tiles
every 16 voxels of the anterior half (y >= 60), sharing no voxel with any training crop. Every
crop carries a random bias field (its inhomogeneity per mm fixed, whatever the crop size) and
noise (mni.py says why). NOT an MLPerf result.

    tpubench run unet3d --config=mini --workdir=DIR

Baselines (benchmarks/unet3d_baselines.py, the same 44 eval tiles and Dice; fit on 400 training
crops of the mini's own stream): majority tissue 0.2532; intensity thresholds (tree, 8 leaves)
0.4632; intensity + 3^3/5^3/9^3 box means, gradient-boosted trees 0.6233 (the strongest).

Measured (seed 0, this config with --config.eval.target_value=0.99 so that it runs to a budget
of 400 steps; deterministic, on the shared 2-core CPU): mean Dice at steps 25, 50, ..., 400:
0.2570 0.2740 0.3293 0.3819 0.4084 0.4083 0.4290 0.4498 0.4675 0.5103 0.5367 0.5288 0.4861
0.5226 0.5460 0.5657; seed 1 the same way: 0.1850 0.2511 0.2926 0.3367 0.3189 0.3694 0.3695
0.4019 0.3999 0.4200 0.4216 0.5211 0.4532 0.4818 0.5500 0.5336. Both still rising, noisy
(up to 0.07 down from one eval to the next), and BELOW the strongest baseline (0.6233) at step
400. Seed 0 continued to a budget of 600 steps (same first 400 evals, bit for bit), steps 425
to 600: 0.5532 0.5589 0.5752 0.5810 0.5832 0.5850 0.5452 0.6125: still below 0.6233.

OPEN, NOT MEASURED: steps to a target above 0.6233 (on any seed). The target 0.80 is
provisional (above the strongest baseline), not chosen by measurement, and no step-bounded slow
test exists yet. Next: run seeds 0 and 1 past step 400 (the poly schedule runs to step 1,000) to
see where the model crosses 0.6233 and plateaus, then set the target between; if that is far
past ~400 steps, a larger batch or more context per crop (the boosted trees' 9^3 box means
already see half of a 16^3 crop) is the next thing to try.

History, each measured on seed 0 with the eval every 25 steps:
  * 32^3 crops, features 8..64, 3 stages, 55 half-overlapping eval crops (the first version):
    8x the voxels a crop; the two runs an earlier session started on an overloaded machine
    never reached their first eval (50 steps) in 15 minutes. Baselines there: 0.2481 / 0.3894 /
    0.6239.
  * 16^3 crops with the bias field spread over each crop's own span (so twice as steep per mm
    as on 32^3 crops; gradient-boosted trees 0.5108, thresholds 0.2836): nnU-Net's SGD (lr
    0.01, Nesterov momentum 0.99) 0.2029 at step 25, 0.2555 at 150, 0.2992 at 250; momentum
    0.9: 0.2643 at step 150; Adam (lr 2e-3, not kept): 0.2477 at step 75. The model had not
    learned even the outside class (input exactly 0) by then: at step 158 of the momentum-0.9
    run, 15,093 of the eval tiles' 81,038 outside voxels were predicted grey matter.
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
    c.eval.target_value = 0.80
    c.eval.target_provisional = True  # below the 0.6233 baseline at step 600 (see above)
    c.eval.every_samples = 25 * 4
    c.optimizer.update({"learning_rate": 0.01, "momentum": 0.99, "weight_decay": 3e-5,
                        "clip_norm": 12.0})
    c.schedule.train_steps = 1000
    c.run.max_train_samples = 1000 * 4
    c.run.steps_per_dispatch = 1  # XLA:CPU runs convs in a lax.scan slowly (benchmarks/README)
    return c
