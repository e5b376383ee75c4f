"""ADE20K as the MLPerf mobile v0.7 `deeplabv3` task reads it: the 2,000 validation images of
the SceneParsing release (ADEChallengeData2016), 512x512, 32 classes.

Files: `DATA_DIR/ADEChallengeData2016/images/validation/ADE_val_%08d.jpg` and
`.../annotations/validation/ADE_val_%08d.png` (one channel: 0 "other", 1-150 the classes ranked
by pixel frequency), the zip that TF deeplab's `datasets/download_and_convert_ade20k.sh` (the
reference's data step) fetches. tensorflow-datasets' `scene_parse150` is NOT this data: its
builder (`tensorflow_datasets/datasets/scene_parse150/scene_parse150_dataset_builder.py`)
downloads ChallengeData2017's `annotations_instance.tar`, RGB masks whose R channel is one of the
100 *instance* categories (CSAILVision/placeschallenge `instancesegmentation/README.md` and
`instanceInfo100_val.txt`: 1 bed, 2 windowpane, ...), with no wall, floor or sky; its labels
cannot be mapped to the reference's 32 classes, so this reads the files.

The 150 -> 32 mapping (mlcommons/mobile_open `vision/deeplab/models_and_code/input_preprocess.py`,
"[!] Ignore more label": `label >= num_of_classes` (32) becomes `ignore_label` (0), with
`datasets/data_generator.py` `_ADE20K_INFORMATION` num_classes 32, ignore_label 0): ADE20K
classes 1-31 keep their ids (wall, building, sky, floor, tree, ... armchair), 0 and 32-150
become 0, which the mIoU ignores. The on-device scorer (mlcommons/mobile_app_open
`android/cpp/datasets/ade20k.cc`) counts the same pixels: only ground truths 1..num_classes.

Preprocessing (mlcommons/mobile_open `vision/deeplab/ade20k_512x512_dataset_on_device/README.md`:
TF deeplab `preprocess_image_and_label(image, label, 512, 512, 512, 512, is_training=False)`):
`resize_to_range` with min = max = 512 and no resize factor (the longer side to 512 unless the
shorter one at 512 already fits: sizes floored), bilinear with `align_corners=True` for the
image, nearest neighbour for the label; then padded at the bottom and right to 512x512, the
image with the mean pixel 127.5 (cast to uint8: 127), the label with the ignore label. Images
are uint8 RGB (`tf.io.decode_jpeg(channels=3)`, as the reference decodes); the model scales
them to [-1, 1]. The reference stores its 512x512 images as JPEG (quality 100) before
inference; this keeps them decoded (no second lossy step).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import ml_collections
import numpy as np

from tpubench.errors import UsageError

ROOT = "ADEChallengeData2016"
URL = "http://data.csail.mit.edu/places/ADEchallenge/ADEChallengeData2016.zip"
NUM_CLASSES = 32  # data_generator.py _ADE20K_INFORMATION
IGNORE_LABEL = 0
SIZE = 512
MEAN_PIXEL = 127.5  # feature_extractor.mean_pixel() for MobileNetV2


def split_dirs(config: ml_collections.ConfigDict, split: str = "validation") -> tuple[str, str]:
    """(images dir, annotations dir) of `split` under `config.data.dir`."""
    root = os.path.join(config.data.dir or ".", ROOT)
    return os.path.join(root, "images", split), os.path.join(root, "annotations", split)


def check(config: ml_collections.ConfigDict) -> None:
    """`UsageError` naming how to get ADE20K unless the validation folders hold images
    (file names only: nothing is read)."""
    images, labels = split_dirs(config)
    if not (os.path.isdir(images) and os.path.isdir(labels)
            and any(f.endswith(".jpg") for f in os.listdir(images))):
        raise UsageError(
            f"ADE20K is not in {config.data.dir or '.'!r} (no {ROOT}/images/validation/*.jpg "
            f"and annotations/validation). Download {URL} (what TF deeplab's "
            f"download_and_convert_ade20k.sh fetches), unzip it into DATA_DIR and pass "
            "--config.data.dir=DATA_DIR (or set TPUBENCH_DATA_DIR). tfds scene_parse150 is not "
            "usable: its annotations are the 100 instance categories. To measure speed without "
            "data, use --config.data.source=synthetic.")


def map_labels(label: np.ndarray, num_classes: int = NUM_CLASSES) -> np.ndarray:
    """ADE20K's 0-150 labels -> the reference's classes: ids >= num_classes become the ignore
    label 0 (input_preprocess.py); 1..num_classes-1 unchanged. int32."""
    label = np.asarray(label, np.int32)
    return np.where(label >= num_classes, IGNORE_LABEL, label)


def resized_size(height: int, width: int, size: int = SIZE) -> tuple[int, int]:
    """TF deeplab `preprocess_utils.resize_to_range(min_size=size, max_size=size,
    factor=None)`: the shorter side to `size`, unless the longer side then exceeds it, in which
    case the longer side to `size`; each side floored (float32 as the TF graph computes it)."""
    h, w, s = np.float32(height), np.float32(width), np.float32(size)
    large = [int(np.floor(h * (s / min(h, w)))), int(np.floor(w * (s / min(h, w))))]
    if max(large) <= size:
        return large[0], large[1]
    return int(np.floor(h * (s / max(h, w)))), int(np.floor(w * (s / max(h, w))))


def preprocess(image: np.ndarray, label: np.ndarray, num_classes: int = NUM_CLASSES,
               size: int = SIZE) -> tuple[np.ndarray, np.ndarray]:
    """uint8 [H, W, 3] image and [H, W] 0-150 label -> uint8 [size, size, 3] and int32
    [size, size]: resized as `resize_to_range`, padded bottom/right, labels mapped."""
    import tensorflow as tf

    new = resized_size(image.shape[0], image.shape[1], size)
    img = tf.compat.v1.image.resize_bilinear(
        tf.cast(image[None], tf.float32), new, align_corners=True)[0].numpy()
    lab = tf.compat.v1.image.resize_nearest_neighbor(
        np.asarray(label, np.int32)[None, ..., None], new, align_corners=True)[0, ..., 0].numpy()
    out_img = np.full((size, size, 3), MEAN_PIXEL, np.float32)
    out_img[:new[0], :new[1]] = img
    out_lab = np.full((size, size), IGNORE_LABEL, np.int32)
    out_lab[:new[0], :new[1]] = map_labels(lab, num_classes)
    return out_img.astype(np.uint8), out_lab  # the reference's tf.cast to uint8 truncates


def read_example(image_path: str, label_path: str) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 [H, W, 3], uint8 [H, W]) decoded by TF as the reference decodes them."""
    import tensorflow as tf

    image = tf.io.decode_jpeg(tf.io.read_file(image_path), channels=3).numpy()
    label = tf.io.decode_png(tf.io.read_file(label_path), channels=1).numpy()[..., 0]
    if image.shape[:2] != label.shape:
        raise ValueError(f"{image_path} and {label_path} differ in size.")
    return image, label


def eval_files(config: ml_collections.ConfigDict) -> list[tuple[str, str]]:
    """The first `eval.samples` validation (image, annotation) paths in file-name order."""
    images, labels = split_dirs(config)
    names = sorted(f[:-4] for f in os.listdir(images) if f.endswith(".jpg"))
    pairs = [(os.path.join(images, n + ".jpg"), os.path.join(labels, n + ".png"))
             for n in names]
    return pairs[:int(config.eval.samples)]


def ade20k_eval(config: ml_collections.ConfigDict, process_index: int,
                process_count: int) -> Iterator[dict[str, np.ndarray]]:
    """Eval batches in file order, read lazily: {"inputs" uint8 [B, 512, 512, 3], "label"
    int32 [B, 512, 512], "mask"}; each process takes a strided share of each global batch."""
    files = eval_files(config)
    size, k = int(config.data.image_size), int(config.model.num_classes)
    local = int(config.eval.batch_size) // process_count
    for start in range(0, len(files), int(config.eval.batch_size)):
        idx = np.arange(start + process_index * local, start + (process_index + 1) * local)
        valid = idx < len(files)
        pairs = [preprocess(*read_example(*files[i if ok else 0]), k, size)
                 for i, ok in zip(idx, valid, strict=True)]
        yield {"inputs": np.stack([p[0] for p in pairs]),
               "label": np.stack([p[1] for p in pairs]),
               "mask": valid.astype(np.float32)}


def ade20k_train(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                 process_count: int):
    """Not implemented: MLPerf has no DeepLab training benchmark (the reference fine-tunes with
    random scale 0.5-2.0, 512 crops and flips; see configs/full.py)."""
    raise UsageError("deeplab on ADE20K is inference only here (tpubench infer deeplab "
                     "--config=full); training from ADE20K is not implemented.")
