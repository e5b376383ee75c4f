"""SSD-MobileNet v1 (width 0.25, first conv at stride 1) on the canvas digits of
configs/mini.py, same anchors and schedule as configs/mobilenet_v2_mini.py. NOT an MLPerf
result; its time to a target is not measured: not run this session (see
configs/mobilenet_v2_mini.py for the v2 mini's measurements and the likely BN-momentum cause;
the same applies here)."""

import ml_collections

from workloads.ssd.configs import mobilenet_v2_mini


def get_config() -> ml_collections.ConfigDict:
    c = mobilenet_v2_mini.get_config()
    c.model.backbone = "mobilenet_v1"
    c.model.width = 0.25
    return c
