"""MobileNetEdgeTPU (same model code: width 0.5, the first 15 of its 22 blocks,
stride-1 stem) on MNIST-5k, the ResNet mini's
data and split (4,000 train / 1,000 held-out digits, 14x14): NOT an MLPerf result.

    tpubench run resnet --config=mobilenet_edgetpu_mini --workdir=DIR
    tpubench infer resnet --config=mobilenet_edgetpu_mini --params=DIR --scenario=Offline \\
        --mode=accuracy --workdir=DIR2 [--quantize=int8]

Baselines on the same split and pixels (the ResNet mini's, `python baselines/resnet.py`,
quoted in configs/mini.py, each tuned by 3-fold CV on the train split): RBF SVC 0.966 (the
strongest), 3-NN 0.937, logistic regression 0.905. (Untuned, as first measured: 1-NN 0.945, RBF
SVC 0.957 at C=10.)

Target: 0.970 top-1 on the 1,000 held-out digits: 0.4 points above the tuned SVC, short of the
1-point margin the ResNet mini now keeps (issue 38, open for this mini), and below the model's
plateau (0.974-0.980 over the last four evals, both seeds). It keeps the ResNet mini's data and
split but not its random shift (`data.random_shift_pixels=0`) nor its 24-epoch schedule: what
was measured is below.
Measured (JAX 0.10.2 CPU, `tpubench run` with `--config.eval.target_value=1.01`, evals every
epoch = 125 steps of 32), top-1 at steps 125, 250, ..., 1,500:
    seed 0: 0.618 0.556 0.903 0.957 0.955 0.967 0.965 0.969 0.975 0.974 0.978 0.978
            -> 0.970 first reached at step 1,125 (epoch 9)
    seed 1: 0.547 0.767 0.924 0.892 0.953 0.967 0.973 0.977 0.977 0.979 0.980 0.979
            -> 0.970 first reached at step 875 (epoch 7)
Same optimizer and schedule as the ResNet mini (LARS 2.0, 2 warmup epochs of 12, batch 32).
Wall time: the 1,500 steps took 136 s (seed 0) and 110 s (seed 1) after 170 s of init and
compile, on the 2-core machine shared with five other training jobs (load average 8-14): not
a speed figure.
"""

import ml_collections

from workloads.resnet.configs import mini
from workloads.resnet.configs.mobilenet_edgetpu import set_mobilenet_edgetpu


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    set_mobilenet_edgetpu(c, width=0.5, blocks=15, stem_stride=1)
    c.model.bn_momentum = 0.9  # as the ResNet mini's batch norm (slim's 0.997: ImageNet runs)
    c.model.depthwise_impl = "shifts"  # XLA:CPU grouped convs are slow (tpubench/nn/mobilenet.py)
    c.optimizer.update({"name": "lars", "learning_rate": 2.0, "momentum": 0.9,
                        "weight_decay": 1e-4, "epsilon": 0.0})
    # The ResNet mini's schedule (2 warmup epochs of 24: 250 and 3,000 steps of 32), budget and
    # random 1-pixel shifts; its target, 1 point above the tuned SVC.
    c.eval.target_value = 0.976
    return c
