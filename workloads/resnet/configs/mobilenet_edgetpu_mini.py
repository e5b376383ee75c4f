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

Target: 0.976 top-1 on the 1,000 held-out digits, 1 point above the tuned SVC (as the ResNet
mini's), with the ResNet mini's random 1-pixel shifts, 24-epoch schedule (LARS 2.0, 2 warmup
epochs, batch 32) and 3,000-step budget. (Until 2026-12-05: no shifts, 12 epochs, target 0.970,
0.4 points above the SVC.)
Measured 2026-12-05 on an Intel Xeon (2 cores, two runs at a time; JAX 0.10.2 CPU; `tpubench run
resnet --config=mobilenet_edgetpu_mini --config.eval.target_value=1.01`, evals every epoch = 125
steps of 32), top-1 at epochs 1-24:
    seed 0: .462 .736 .773 .941 .940 .946 .946 .958 .960 .957 .971 .978 .979 .977 .979 .975
            .980 .983 .980 .984 .983 .982 .984 .984   -> 0.976 first at epoch 12 (step 1,500)
    seed 1: .520 .564 .895 .934 .914 .946 .962 .967 .959 .967 .967 .976 .968 .983 .982 .982
            .985 .985 .986 .987 .987 .988 .987 .987   -> epoch 12
    seed 2: first at epoch 13 (.977), plateau .977-.979;  seed 3: epoch 11 (.982);
    seed 4: epoch 8 (.978)
  with lr 2.000002 (a rounding perturbation): seeds 0-4 first at epochs 11, 11, 11, 12, 14.
Every run reaches the target by epoch 14 of 24; the last four evals sit at .978-.988. About 100 s
for the 3,000 steps after ~60-90 s of init and compile (two runs at a time): not a speed figure.
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
