"""SSD-MobileNet v1 (width 0.25, first conv at stride 1) on the canvas digits of
configs/mini.py, same anchors, learning rate (0.02), schedule (the ResNet mini's decays at
steps 1,000 and 1,250, 1,500 steps), batch-norm momentum (0.9) and target as
configs/mobilenet_v2_mini.py. NOT an MLPerf result.

    tpubench run ssd --config=mobilenet_v1_mini --workdir=DIR

Target: NOT MEASURED (v2's 0.52, provisional): this config has not been run.
configs/mobilenet_v2_mini.py has what was measured on the v2 mini (the Keras BN momentum
0.999 that collapsed its eval, its unstable loss at lr 0.05, 0.4547 with decays at epochs 5
and 6, and, on this schedule, seed 0 at 0.5354 at step 1,125, above the 0.4763 baseline);
the same model code and schedule apply here, the v1 body has not been trained."""

import ml_collections

from workloads.ssd.configs import mobilenet_v2_mini


def get_config() -> ml_collections.ConfigDict:
    c = mobilenet_v2_mini.get_config()
    c.model.backbone = "mobilenet_v1"
    c.model.width = 0.25
    c.eval.target_provisional = True  # v2's target; this config has never been run
    return c
