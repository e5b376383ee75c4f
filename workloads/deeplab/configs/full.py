"""DeepLabv3+ MobileNetV2 at the MLPerf mobile v0.7 `deeplabv3` size: 512x512 RGB, 32 ADE20K
classes (label 0 ignored), output stride 16, decoder stride 4 (workloads/deeplab/model.py cites
the reference's files and flags). Inference only here: MLPerf has no DeepLab training benchmark.
`data.source` "ade20k" reads the 2,000 ADE20K validation images from
`DATA_DIR/ADEChallengeData2016` as the mobile reference prepares them (512x512, uint8 pixels,
the 150 classes mapped to 32: workloads/deeplab/ade20k.py cites the files):

    tpubench infer deeplab --config=full --config.data.dir=DATA_DIR --config.model.checkpoint=F

`--config.data.source=synthetic` gives shapes only (`tpubench fit deeplab --config=full`).

What training it would need (the reference's README, mlcommons/mobile_open
vision/deeplab/models_and_code): ADE20K train (20,210 images) remapped to 32 classes
(`build_ade20k_data.py`), resized to 512 (`min_resize_value` = `max_resize_value` = 512,
`resize_factor` 16), random scale 0.5-2.0 and crop 512x512, batch 4, fine-tuned 200,000 steps
with Adam at 5e-6 from the TF model zoo's deeplabv3_mnv2_ade20k_train_2018_12_03 checkpoint,
batch norms frozen (`fine_tune_batch_norm=False`). Its quality: mIoU 0.5528 (FP32) on the 2,000
val images; the v0.7 mobile target is 97% of it (../shared/docs/WORKLOADS.md; the reference
README's "accuracy target" section). The published weights load through
`--config.model.checkpoint=freeze.pb` (or an .npz of its names; workloads/deeplab/convert.py).
"""

import ml_collections

from tpubench.config import base_config

REFERENCE_MIOU = 0.5528  # mobile_open vision/deeplab/README.md: fp32 checkpoint on x86


def get_config() -> ml_collections.ConfigDict:
    c = base_config()
    c.workload = "deeplab"
    c.is_mlperf = False  # no MLPerf Training benchmark; `tpubench infer` serves deeplabv3
    c.submission.division = "open"
    c.model.update({
        "num_classes": 32, "width": 1.0, "output_stride": 16, "stem_stride": 2,
        "aspp_filters": 256, "decoder_filters": 256, "projection_filters": 48,
        "dropout_rate": 0.1, "backbone_bn_momentum": 0.997, "head_bn_momentum": 0.9997,
        "depthwise_impl": "conv", "dtype": "float32", "checkpoint": ""})
    c.data.dataset = "ade20k_32"
    c.data.source = "ade20k"
    c.data.uint8_pixels = True  # the reference's ImageTensor: uint8, scaled in the graph
    c.data.image_size = 512
    c.data.image_channels = 3
    c.data.global_batch_size = 4
    c.data.train_samples = 20210
    c.eval.samples = 2000
    c.eval.batch_size = 1
    c.eval.ignore_label = 0
    c.eval.target_metric = "mean_iou"
    c.eval.target_value = round(0.97 * REFERENCE_MIOU, 6)  # 0.536216
    c.optimizer.update({"name": "adam", "learning_rate": 5e-6, "epsilon": 1e-8,
                        "weight_decay": 0.0})
    c.schedule.update({"train_steps": 200_000, "decay_power": 0.9})
    c.run.max_train_samples = 200_000 * 4
    return c
