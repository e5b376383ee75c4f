"""ResNet-50 v1.5 on ImageNet, MLPerf Training v0.7 closed division, LARS.

Hyperparameters of Google's JAX record entry (TPU v3-4096, 0.472 min): global batch 65,536,
LARS base lr 23.08, warmup 33 epochs = 660 steps (as WORKLOADS.md lists it), momentum 0.9537, poly
power 2 to
1e-4, weight decay 1e-4, label smoothing 0.1, eval every 4 epochs, target top-1 0.759.

    python -m workloads.resnet.main --config=workloads/resnet/configs/full.py --workdir=DIR \\
        --config.data.dir=TFDS_DIR
    tpubench fit resnet --config=full --topology=v5p:2x2x2   # will it fit, before renting it

Measured: not run to target here (needs a pod slice and ImageNet). On this 2-core CPU, init +
AOT compile and MFU are in the README's benchmark table.
"""

import ml_collections

from tpubench.config import base_config, steps_for_epochs
from tpubench.mlperf import rules

# What a closed run needs besides the code (`tpubench list` prints it; the run checks it).
CLOSED_NEEDS = (
    "ImageNet 2012 through tfds (manual download of the ILSVRC2012 tars, then `tfds "
    "build imagenet2012`; --config.data.dir)"
)


def set_schedule(c: ml_collections.ConfigDict, warmup_epochs: float, train_epochs: float) -> None:
    """Linear warmup, then poly-2 decay to 1e-4, from the reference's epochs (converted to the
    schedule's steps at this config's batch; `tpubench.config.steps_for_epochs`)."""
    def steps(epochs):
        return steps_for_epochs(epochs, c.data.train_samples, c.data.global_batch_size)
    c.schedule.update({"warmup_steps": steps(warmup_epochs), "train_steps": steps(train_epochs),
                       "end_learning_rate": 1e-4, "decay_power": 2.0})


def get_config() -> ml_collections.ConfigDict:
    c = base_config()
    c.workload = "resnet"
    c.is_mlperf = True
    c.submission.division = "closed"
    c.data.dataset = "imagenet2012"
    c.data.source = "tfds"
    c.data.eval_split = "validation"
    c.data.image_size = 224
    c.data.image_channels = 3
    # Raw uint8 pixels to the device, normalised there (issue 17.2): 4x fewer input bytes.
    c.data.uint8_pixels = True
    # The reference's augmentation is the random-resized crop and flip; a random shift (the
    # in-memory minis' augmentation, input_pipeline.random_shifts) is not it: 0 here.
    c.data.random_shift_pixels = 0
    c.model.num_classes = 1000
    c.data.train_samples = 1_281_167
    c.eval.samples = 50_000
    c.data.global_batch_size = 65536
    c.eval.batch_size = 65536
    c.model.label_smoothing = 0.1
    c.model.arch = "resnet"  # or "mobilenet_edgetpu" (configs/mobilenet_edgetpu.py)
    c.model.update({"stage_sizes": (3, 4, 6, 3), "num_filters": 64, "stem": "imagenet"})
    # How convolutions are computed, not what (tpubench/nn/convolution.py): "auto" = 1x1 as matmuls
    # when tracing for CPU (XLA:CPU runs them 3x faster so), lax convolutions elsewhere.
    c.model.conv_impl = "auto"
    c.optimizer.update({"name": "lars", "learning_rate": 23.08, "momentum": 0.9537,
                        "weight_decay": 1e-4, "epsilon": 0.0})
    set_schedule(c, warmup_epochs=33, train_epochs=88)
    c.eval.target_metric = "top1_accuracy"
    c.eval.target_value = rules.target_value("resnet")
    c.eval.every_samples = 4 * c.data.train_samples
    c.run.max_train_samples = 92 * c.data.train_samples
    c.run.steps_per_dispatch = 16
    c.model.dtype = "bfloat16"
    return c
