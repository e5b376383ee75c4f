"""ResNet-50 v1.5 on ImageNet, MLPerf Training v0.7 closed division, LARS.

Hyperparameters of Google's JAX record entry (TPU v3-4096, 0.472 min): global batch 65,536,
LARS base lr 23.08, warmup 33 epochs (as WORKLOADS.md lists it), momentum 0.9537, poly power 2 to
1e-4, weight decay 1e-4, label smoothing 0.1, eval every 4 epochs, target top-1 0.759.

    python -m workloads.resnet.main --config=workloads/resnet/configs/full.py --workdir=DIR \\
        --config.data_dir=TFDS_DIR
    tpubench fit resnet --config=full --topology=v5p:2x2x2   # will it fit, before renting it

Measured: not run to target here (needs a pod slice and ImageNet). On this 2-core CPU, init +
AOT compile and MFU are in the README's benchmark table.
"""

import ml_collections

from tpubench import rules
from tpubench.config import base_config


def get_config() -> ml_collections.ConfigDict:
    c = base_config()
    c.workload = "resnet"
    c.is_mlperf = True
    c.submission_division = "closed"
    c.dataset = "imagenet2012"
    c.data_source = "tfds"
    c.eval_split = "validation"
    c.image_size = 224
    c.image_channels = 3
    c.num_classes = 1000
    c.train_samples = 1_281_167
    c.eval_samples = 50_000
    c.global_batch_size = 65536
    c.eval_batch_size = 65536
    c.label_smoothing = 0.1
    c.model = ml_collections.ConfigDict(
        {"stage_sizes": (3, 4, 6, 3), "num_filters": 64, "stem": "imagenet"})
    c.optimizer = ml_collections.ConfigDict({
        "name": "lars",
        "base_learning_rate": 23.08,
        "end_learning_rate": 1e-4,
        "poly_power": 2.0,
        "warmup_epochs": 33.0,
        "train_epochs": 88.0,
        "momentum": 0.9537,
        "weight_decay": 1e-4,
        "epsilon": 0.0,
    })
    c.target_metric = "top1_accuracy"
    c.target_value = rules.target_value("resnet")
    c.eval_every_samples = 4 * c.train_samples
    c.max_train_samples = 92 * c.train_samples
    c.steps_per_dispatch = 16
    c.dtype = "bfloat16"
    return c
