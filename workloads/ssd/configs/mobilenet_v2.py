"""SSD-MobileNet v2 at 300x300 (the MLPerf Mobile suite's `ssd-mobilenetv2`), checked
abstractly: as configs/mobilenet_v1.py with the MobileNet v2 body (taps
layer_15/expansion_output 19x19x576 and layer_19 10x10x1280, TF object-detection
`ssd_mobilenet_v2_feature_extractor.py`), the same 1x1 box-predictor convs. Same deliberate
differences (PyTorch-reference default boxes: 2,278; 81 labels). The body matches Keras's
MobileNetV2 to the parameter (tests/test_ssd_mobilenet.py).
"""

import ml_collections

from workloads.ssd.configs import mobilenet_v1


def get_config() -> ml_collections.ConfigDict:
    c = mobilenet_v1.get_config()
    c.model.backbone = "mobilenet_v2"
    return c
