"""SSD-MobileNet v1 (width 0.25, first conv at stride 1) on the canvas digits of
configs/mini.py, same anchors, learning rate (0.02), schedule (decays at epochs 5 and 6,
875 steps) and batch-norm momentum (0.9) as configs/mobilenet_v2_mini.py. NOT an MLPerf
result.

    tpubench run ssd --config=mobilenet_v1_mini --workdir=DIR

Target: NOT MEASURED, NOT REACHED (the ResNet mini's 0.52, provisional): this config has not
been run. configs/mobilenet_v2_mini.py has what was measured on the v2 mini (the Keras BN
momentum 0.999 that collapsed its eval, its unstable loss at lr 0.05, and its curve at lr
0.02 on this schedule: 0.4547 at step 875, short of the strongest baseline's 0.4763); the
same model code and schedule apply here."""

import ml_collections

from workloads.ssd.configs import mobilenet_v2_mini


def get_config() -> ml_collections.ConfigDict:
    c = mobilenet_v2_mini.get_config()
    c.model.backbone = "mobilenet_v1"
    c.model.width = 0.25
    return c
