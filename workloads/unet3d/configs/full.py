"""nnU-Net 3D U-Net on BraTS 2019 (the model of MLPerf Inference v0.7 `3d-unet`), trained as
nnUNetTrainerV2 trains it: NOT an MLPerf Training v0.7 benchmark (v0.7 Training has no 3D U-Net;
the benchmark is the inference one, `tpubench infer unet3d --config=full`).

Model (model.py): 4 modalities in, 4 classes out, features 32..320, 5 stride-2 stages, instance
norm, leaky ReLU, deep supervision: 31,198,976 parameters (tests/test_unet3d.py checks it against
Generic_UNet's construction rules); 3.63 TFLOPs per 224x224x160 forward (XLA cost analysis,
measured on this CPU, batch 1). Training as nnUNetTrainerV2 (MIC-DKFZ/nnUNet
`nnunet/training/network_training/nnUNetTrainerV2.py`): 128^3 patches, batch 2, SGD lr 0.01,
Nesterov momentum 0.99, weight decay 3e-5, poly decay (exponent 0.9), gradient norm clipped at
12, 1000 epochs of 250 iterations, Dice + cross-entropy with deep supervision; eval on the
reference's fold-1 cases at 224x224x160; target: the reference model's mean Dice 0.853 (its
README, FP32).

    tpubench run unet3d --config=full --config.data.dir=PREPROCESSED \\
        --config.data.label_dir=LABELS_TR        # see workloads/unet3d/brats.py

Measured: not run here (needs BraTS 2019 and an accelerator).
"""

import ml_collections

from tpubench.config import base_config

REFERENCE_MEAN_DICE = 0.853  # v0.7 3d-unet README: FP32 mean 0.85300 (WT 0.9141, TC 0.8679,
# ET 0.7770) on fold 1 of the BraTS 2019 training set


def get_config() -> ml_collections.ConfigDict:
    c = base_config()
    c.workload = "unet3d"
    c.is_mlperf = False  # MLPerf Training v0.7 has no 3D U-Net; the inference spec is the benchmark
    c.submission.division = "open"
    c.model.update({"num_classes": 4, "base_features": 32, "max_features": 320, "num_pools": 5,
                    "deep_supervision": True, "dtype": "bfloat16"})
    c.data.dataset = "brats2019"
    c.data.source = "brats"
    c.data.label_dir = ""
    c.data.in_channels = 4
    c.data.train_shape = (128, 128, 128)
    c.data.eval_shape = (224, 224, 160)
    c.data.crop_size = 128
    c.data.global_batch_size = 2
    c.data.train_samples = 250 * 2  # nnU-Net's "epoch": 250 iterations of 2 patches
    c.eval.samples = 67
    c.eval.batch_size = 1
    c.eval.regions = "brats"
    c.eval.inference_variant = "3d-unet-99"  # or "3d-unet-99.9" (tpubench infer)
    c.eval.class_names = ("background", "edema", "non-enhancing tumor", "enhancing tumor")
    c.eval.target_metric = "mean_dice"
    c.eval.target_value = REFERENCE_MEAN_DICE
    c.eval.every_samples = 50 * c.data.train_samples
    c.optimizer.update({"name": "sgd_nesterov", "learning_rate": 0.01, "momentum": 0.99,
                        "weight_decay": 3e-5, "clip_norm": 12.0})
    c.schedule.train_steps = 1000 * 250
    c.run.max_train_samples = 1000 * c.data.train_samples
    c.run.steps_per_dispatch = 1
    return c
