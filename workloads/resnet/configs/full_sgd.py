"""ResNet-50 v1.5 on ImageNet, MLPerf v0.7 closed division, the SGD+momentum variant.

Reference scaling: lr 0.128 * B / 256 (B = 1024 -> 0.512), warmup 5 epochs, poly decay (power 2)
to 1e-4, momentum 0.9, weight decay 1e-4 * 2^N (N = 0), 90 epochs, eval every 4 epochs.

    python -m workloads.resnet.main --config=workloads/resnet/configs/full_sgd.py --workdir=DIR
"""

import ml_collections

from workloads.resnet.configs import full

# What a closed run needs besides the code (`tpubench list` prints it; the run checks it).
CLOSED_NEEDS = (
    "ImageNet 2012 through tfds (manual download of the ILSVRC2012 tars, then `tfds "
    "build imagenet2012`; --config.data.dir)"
)


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.data.global_batch_size = 1024
    c.eval.batch_size = 1024
    c.model.label_smoothing = 0.0
    c.optimizer.update({"name": "sgd", "learning_rate": 0.512, "momentum": 0.9,
                        "weight_decay": 1e-4, "epsilon": 0.0})
    full.set_schedule(c, warmup_epochs=5, train_epochs=90)  # 6,260 and 112,680 steps
    return c
