"""ResNet v1.5 (same model code, 3 bottleneck stages of 1 block, 12 filters, small stem) on the
sklearn handwritten digits (1,437 train / 360 held-out 8x8 images): NOT an MLPerf result.

    python -m workloads.resnet.main --config=workloads/resnet/configs/mini.py --workdir=DIR
    tpubench run resnet --config=mini --workdir=DIR

Target: 0.97 top-1 on the 360 held-out digits. Measured on 2 CPU cores (AMD EPYC, JAX 0.10.2
CPU), 6 runs: 0.9806 at epoch 6 (step 270) every time; time to target 2.9-3.4 s (median 3.0 s);
untimed init + AOT compile 7.9-9.4 s; 4,600-5,600 train examples/s.
"""

import ml_collections

from workloads.resnet.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.is_mlperf = False
    c.submission_division = "open"
    c.dataset = "sklearn_digits"
    c.data_source = "digits"
    c.image_size = 8
    c.image_channels = 1
    c.num_classes = 10
    c.train_samples = 1437
    c.eval_samples = 360
    c.global_batch_size = 32
    c.eval_batch_size = 120
    c.label_smoothing = 0.0
    c.model = ml_collections.ConfigDict(
        {"stage_sizes": (1, 1, 1), "num_filters": 12, "stem": "small"})
    c.optimizer = ml_collections.ConfigDict({
        "name": "lars",
        "base_learning_rate": 2.0,
        "end_learning_rate": 1e-4,
        "poly_power": 2.0,
        "warmup_epochs": 2.0,
        "train_epochs": 15.0,
        "momentum": 0.9,
        "weight_decay": 1e-4,
        "epsilon": 0.0,
    })
    c.target_value = 0.97
    c.eval_every_samples = 45 * 32  # ~1 epoch (45 steps of 32)
    c.max_train_samples = 15 * c.train_samples
    c.steps_per_dispatch = 1  # XLA:CPU runs convs in a lax.scan ~4x slower: benchmarks/README
    c.dtype = "float32"
    return c
