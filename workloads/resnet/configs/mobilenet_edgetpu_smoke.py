"""One train step and one eval step of a tiny MobileNetEdgeTPU on synthetic data (tests).

    tpubench run resnet --config=mobilenet_edgetpu_smoke --workdir=DIR

Expected: status "aborted" after 1 step (the budget), in seconds.
"""

import ml_collections

from workloads.resnet.configs import mobilenet_edgetpu_mini, smoke


def get_config() -> ml_collections.ConfigDict:
    c = mobilenet_edgetpu_mini.get_config()
    s = smoke.get_config()
    for section in ("data", "eval", "schedule"):
        c[section].update(s[section].to_dict())
    c.run.max_train_samples = s.run.max_train_samples
    c.model.update({"width": 0.25, "blocks": 3})
    return c
