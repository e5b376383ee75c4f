"""COCO 2017 through tensorflow-datasets (`coco/2017`): what SSD's and Mask R-CNN's readers share.

tfds keeps each image's objects (box, label, crowd flag, area, annotation id); boxes are
(ymin, xmin, ymax, xmax) normalised to [0, 1], labels 0..79 in category-id order. Both
references skip images without boxes in training (SSD's utils.py `COCODetection`, Mask R-CNN's
`remove_images_without_annotations`): `has_boxes`.
"""

from __future__ import annotations

from typing import Any

import ml_collections

from tpubench import sources


def builder(config: ml_collections.ConfigDict):
    """The tfds builder of config.data.dataset, or a `UsageError` saying how to prepare it."""
    return sources.tfds_builder(
        config, "Build it with `tfds build coco/2017 --data_dir=DATA_DIR` (downloads ~25 GB "
        "from cocodataset.org)")


def tensorflow():
    """The `tensorflow` module for tf.data, with the GPUs hidden from it (they stay JAX's)."""
    import tensorflow as tf

    tf.config.set_visible_devices([], "GPU")
    return tf


def objects(tf: Any, ex: dict) -> tuple[Any, Any, Any, Any]:
    """(boxes ltrb, labels + 1, crowd, area) of an example's objects, as tf tensors (rows cut to
    the shortest field, which only mock data needs)."""
    o = ex["objects"]
    n = tf.reduce_min(tf.stack([tf.shape(o[k])[0] for k in ("bbox", "label", "is_crowd",
                                                              "area")]))
    b = o["bbox"][:n]  # tfds: (ymin, xmin, ymax, xmax), normalised
    boxes = tf.stack([b[:, 1], b[:, 0], b[:, 3], b[:, 2]], axis=1)
    return (boxes, tf.cast(o["label"][:n], tf.int32) + 1, tf.cast(o["is_crowd"][:n], tf.int32),
            tf.cast(o["area"][:n], tf.float32))


def has_boxes(ex: dict) -> Any:
    """Whether an example has at least one object (a tf.data filter predicate)."""
    tf = tensorflow()
    return tf.shape(ex["objects"]["label"])[0] > 0


def train_stream(config: ml_collections.ConfigDict, split: Any, buffer: int) -> Any:
    """The train examples with boxes (`has_boxes`), epoch after epoch, as a tf.data dataset.

    MLPerf Training Rules v0.7, Training Data Order: each epoch visits every example once, in a
    new random order; no example of epoch e + 1 comes before the last one of epoch e (the
    references' DataLoaders: SSD's RandomSampler, Mask R-CNN's DistributedSampler reshuffled
    each epoch). Here: tfds's file order and a `buffer`-example shuffle, each reshuffled every
    epoch from `run.seed` (deterministic, so a resumed run that skips the steps done reads the
    same stream), then `repeat`. A buffer shuffle within the epoch is not a uniform
    permutation of COCO's 117,266 images (random access would need an ArrayRecord copy)."""
    import tensorflow_datasets as tfds

    seed = int(config.run.seed)
    ds = builder(config).as_dataset(split=split, shuffle_files=True, read_config=tfds.ReadConfig(
        shuffle_seed=seed, shuffle_reshuffle_each_iteration=True))
    return ds.filter(has_boxes).shuffle(buffer, seed=seed, reshuffle_each_iteration=True).repeat()
