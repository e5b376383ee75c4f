"""COCO 2017 for Mask R-CNN: images and boxes from tensorflow-datasets (`coco/2017`), instance
masks from COCO's own annotation files through pycocotools.

tensorflow-datasets' coco/2017 keeps each object's box, label, crowd flag, area and annotation
`id` but not its segmentation; the masks are rasterised from `instances_{train,val}2017.json`
(`config.data.annotations_dir`) by `pycocotools.coco.COCO.annToMask`, looked up by that `id`.

Source: mlcommons/training object_detection/pytorch/maskrcnn_benchmark (v0.7):
- data/datasets/coco.py `COCODataset`: train skips images without annotations
  (`remove_images_without_annotations`) and drops crowd annotations from the rest; labels
  are the category's rank + 1 (here tfds's `label`, 0..79 in category-id order, + 1).
- data/transforms/transforms.py `Resize(800, 1333)` (`get_size`: the short side to 800 unless
  the long side would pass 1333), `RandomHorizontalFlip(0.5)` (train only), `to_bgr255` and
  `Normalize(PIXEL_MEAN = [102.9801, 115.9465, 122.7717], PIXEL_STD = [1, 1, 1])` (BGR, 0..255:
  config/defaults.py). Here the image is then padded into the config's square bucket
  (`data.image_size`), `image_hw` saying where it ends.
Boxes are exclusive pixel ltrb of the resized image; each instance's mask is cut to its box at
`data.gt_mask_size` (`masks.crop_to_box`, from the full-resolution mask); eval batches carry the
masks at the ORIGINAL size in the top-left corner of the bucket (pycocotools scores there).
Ground truth beyond `data.max_boxes` per image is cut; boxes thinner than 1e-4 of the image are
dropped. The flip is drawn from (seed, step, row), so a resumed run sees the same batches.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterator

import ml_collections
import numpy as np

from tpubench.datasets import coco as tfds_coco
from tpubench.detection import masks
from tpubench.errors import UsageError

PIXEL_MEAN_BGR = np.array([102.9801, 115.9465, 122.7717], np.float32)
ANNOTATION_FILES = {"train": "instances_train2017.json", "validation": "instances_val2017.json"}


def annotation_path(config: ml_collections.ConfigDict, split: str) -> str:
    """The instances JSON of `split`, or a `UsageError` naming where it comes from."""
    path = os.path.join(config.data.get("annotations_dir", ""), ANNOTATION_FILES[split])
    if not os.path.exists(path):
        raise UsageError(
            f"maskrcnn: instance masks need {path!r} (COCO 2017's annotations_trainval2017.zip "
            "from cocodataset.org, unzipped): pass --config.data.annotations_dir=DIR.")
    return path


def check(config: ml_collections.ConfigDict) -> None:
    """Paths only: the tfds dataset is prepared and both annotation files exist."""
    tfds_coco.builder(config)
    for split in ANNOTATION_FILES:
        annotation_path(config, split)


@functools.lru_cache(maxsize=2)
def _coco(path: str):
    from pycocotools.coco import COCO

    return COCO(path)


def instance_mask(coco, annotation_id: int) -> np.ndarray:
    """The uint8 [H, W] mask of one annotation (polygons or RLE, crowd included)."""
    try:
        ann = coco.anns[int(annotation_id)]
    except KeyError:
        raise UsageError(f"maskrcnn: annotation id {int(annotation_id)} of the tfds dataset is "
                         "not in the instances file: tfds and annotations of different "
                         "COCO releases?") from None
    return coco.annToMask(ann).astype(np.uint8)


def resized_hw(h: int, w: int, min_size: int, max_size: int) -> tuple[int, int]:
    """transforms.py `Resize.get_size`: (height, width) after the resize."""
    size = min_size
    short, long = float(min(h, w)), float(max(h, w))
    if long / short * size > max_size:
        size = int(round(max_size * short / long))
    if (w <= h and w == size) or (h <= w and h == size):
        return h, w
    if w < h:
        return int(size * h / w), size
    return size, int(size * w / h)


def _image(image: np.ndarray, out_hw: tuple[int, int], bucket: int, flip: bool) -> np.ndarray:
    """uint8 RGB [H, W, 3] -> the normalised BGR image resized to out_hw, padded to the bucket."""
    from PIL import Image

    h, w = out_hw
    x = np.asarray(Image.fromarray(image).resize((w, h), Image.BILINEAR), np.float32)
    if flip:
        x = x[:, ::-1]
    out = np.zeros((bucket, bucket, 3), np.float32)
    out[:h, :w] = x[..., ::-1] - PIXEL_MEAN_BGR
    return out


def example_arrays(ex: dict, coco, config: ml_collections.ConfigDict, train: bool,
                   flip: bool = False) -> dict[str, np.ndarray]:
    """One tfds example (numpy) -> one row of the workload's batch (train or eval fields)."""
    c = config.data
    bucket, m, crop = int(c.image_size), int(c.max_boxes), int(c.gt_mask_size)
    h, w = ex["image"].shape[:2]
    oh, ow = resized_hw(h, w, int(c.min_image_size), int(c.max_image_size))
    o = ex["objects"]
    n = min(len(o[k]) for k in ("bbox", "label", "is_crowd", "area", "id"))
    b = np.asarray(o["bbox"][:n], np.float64)  # (ymin, xmin, ymax, xmax), normalised
    norm = np.stack([b[:, 1], b[:, 0], b[:, 3], b[:, 2]], 1)
    crowd = np.asarray(o["is_crowd"][:n], bool)
    keep = ((norm[:, 2] - norm[:, 0]) > 1e-4) & ((norm[:, 3] - norm[:, 1]) > 1e-4)
    if train:
        keep &= ~crowd  # COCODataset drops crowd annotations in training
    rows = np.nonzero(keep)[0][:m]
    if flip:
        norm = np.stack([1 - norm[:, 2], norm[:, 1], 1 - norm[:, 0], norm[:, 3]], 1)
    boxes = np.zeros((m, 4), np.float32)
    boxes[:len(rows)] = norm[rows] * [ow, oh, ow, oh]
    labels = np.zeros((m,), np.int32)
    labels[:len(rows)] = np.asarray(o["label"][:n])[rows] + 1
    crops = np.zeros((m, crop, crop), np.float32)
    full = np.zeros((m, bucket, bucket), np.uint8) if not train else None
    for k, r in enumerate(rows):
        mask = instance_mask(coco, o["id"][r])[:h, :w]
        if flip:
            mask = mask[:, ::-1]
        crops[k] = masks.crop_to_box(mask, norm[r] * [w, h, w, h], crop)
        if full is not None:
            full[k, :h, :w] = mask
    out = {"inputs": _image(ex["image"], (oh, ow), bucket, flip), "boxes": boxes,
           "labels": labels, "image_hw": np.array([oh, ow], np.float32), "mask_crops": crops}
    if not train:
        out.update({"size": np.array([h, w], np.float32), "gt_masks": full,
                    "crowd": np.pad(crowd[rows].astype(np.int32), (0, m - len(rows))),
                    "area": np.pad(np.asarray(o["area"][:n], np.float32)[rows],
                                   (0, m - len(rows))),
                    "mask": np.float32(1.0)})
    return out


def _stack(rows: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.stack([r[k] for r in rows]) for k in rows[0]}


def train_batches(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                  process_count: int) -> Iterator[dict[str, np.ndarray]]:
    """This process's share of every global train batch from `start_step` (images with at
    least one annotation, shuffled by the run's seed), as numpy."""
    import tensorflow_datasets as tfds

    coco = _coco(annotation_path(config, "train"))
    split = tfds.split_for_jax_process("train", process_index=process_index,
                                       process_count=process_count)
    local = int(config.data.global_batch_size) // process_count
    # Images without annotations are dropped (as SSD's stream); a resumed run skips the rows
    # of the steps before `start_step` in tf.data, never converting them.
    ds = tfds_coco.train_stream(config, split, 16 * local)  # per epoch, epochs unmixed
    examples = iter(tfds.as_numpy(ds.skip(start_step * local)))
    for step in itertools.count(start_step):
        rows = []
        for ex in itertools.islice(examples, local):
            r = process_index * local + len(rows)
            flip = np.random.default_rng([config.run.seed, step, r]).random() < 0.5
            rows.append(example_arrays(ex, coco, config, train=True, flip=flip))
        yield _stack(rows)


def eval_batches(config: ml_collections.ConfigDict, process_index: int, process_count: int
                 ) -> Iterator[dict[str, np.ndarray]]:
    """This process's eval batches (every val2017 image), padded with mask 0."""
    import tensorflow_datasets as tfds

    coco = _coco(annotation_path(config, "validation"))
    split = tfds.split_for_jax_process(config.data.eval_split, process_index=process_index,
                                       process_count=process_count)
    local = int(config.eval.batch_size) // process_count
    rows = []
    for ex in tfds.as_numpy(tfds_coco.builder(config).as_dataset(split=split)):
        rows.append(example_arrays(ex, coco, config, train=False))
        if len(rows) == local:
            yield _stack(rows)
            rows = []
    if rows:
        pad = {k: np.zeros_like(v) for k, v in rows[0].items()}
        yield _stack(rows + [pad] * (local - len(rows)))
