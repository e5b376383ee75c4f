"""COCO 2017 through tensorflow-datasets (`coco/2017`) with the SSD reference's preprocessing.

Source: mlcommons/training single_stage_detector/ssd/utils.py (v0.7):
- `COCODetection`: images without boxes are skipped (here: filtered from the stream; the
  config's train/eval sample counts are the reference's counts after that filter); labels are
  the category's rank + 1 (0 = background): tfds's `label` (0..79, in category-id order) + 1.
- `SSDCropping` (train): repeatedly pick one of (keep the image, min IoU 0.1, 0.3, 0.5, 0.7,
  0.9, any crop); for a crop, `max_samples` tries (config.data.max_samples, 1 or 50) of a
  window with sides uniform in [0.3, 1] and aspect in [0.5, 2] whose IoU with EVERY box lies
  strictly between min IoU and +inf, keeping the boxes whose centre is inside (at least one),
  clipped to the window. The reference loops until one succeeds; here the loop is bounded (32
  mode draws, then the whole image), which changes nothing measurable (the keep option alone
  is drawn with probability 1/7 per round).
- `RandomHorizontalFlip(p=0.5)`, `ColorJitter(brightness=0.125, contrast=0.5, saturation=0.5,
  hue=0.05)` (here in a fixed order: brightness, contrast, saturation, hue), resize to
  300x300, `Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])`.
- eval (`trans_val`): resize to 300x300 and normalise only.
Randomness is stateless, seeded by (seed, example index), so a resumed run sees the same images.
Boxes narrower or shorter than 1e-4 of the image are dropped (their log-size target is -inf),
and ground truth beyond config.data.max_boxes per image is cut.
"""

from __future__ import annotations

from collections.abc import Iterator

import ml_collections
import numpy as np

from tpubench.datasets import coco as tfds_coco

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
MIN_IOUS = (-1.0, 0.1, 0.3, 0.5, 0.7, 0.9, -np.inf)  # index 0 = keep the image
MODE_DRAWS = 32


def _iou(tf, boxes, window):
    lt = tf.maximum(boxes[:, :2], window[:2])
    rb = tf.minimum(boxes[:, 2:], window[2:])
    wh = tf.maximum(rb - lt, 0.0)
    inter = wh[:, 0] * wh[:, 1]
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    warea = (window[2] - window[0]) * (window[3] - window[1])
    return inter / (area + warea - inter)


def ssd_crop(image, boxes, labels, seed, max_samples: int):
    """utils.py SSDCropping on one image (float image [H, W, 3], ltrb boxes [N, 4] in [0, 1])."""
    tf = tfds_coco.tensorflow()
    min_ious = tf.constant(MIN_IOUS, tf.float32)

    def attempt(seed2):
        u = tf.random.stateless_uniform([4], seed=seed2)
        w, h = 0.3 + 0.7 * u[0], 0.3 + 0.7 * u[1]
        left, top = u[2] * (1.0 - w), u[3] * (1.0 - h)
        return tf.stack([left, top, left + w, top + h]), w / h

    def body(i, done, window, keep):
        s = tf.stack([seed[0] + 7919 * tf.cast(i + 1, tf.int64), seed[1]])
        mode = tf.random.stateless_uniform([], seed=s, maxval=7, dtype=tf.int32)
        min_iou = min_ious[mode]

        def tries(j, found, win, kp):
            cand, ratio = attempt(tf.stack([s[0], s[1] + 104729 * tf.cast(j + 1, tf.int64)]))
            ious = _iou(tf, boxes, cand)
            ok = (ratio >= 0.5) & (ratio <= 2.0) & tf.reduce_all(ious > min_iou)
            xc, yc = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
            inside = (xc > cand[0]) & (xc < cand[2]) & (yc > cand[1]) & (yc < cand[3])
            ok = ok & tf.reduce_any(inside) & tf.logical_not(found)
            return (j + 1, found | ok, tf.where(ok, cand, win), tf.where(ok, inside, kp))

        _, found, win, kp = tf.while_loop(
            lambda j, found, *_: (j < max_samples) & tf.logical_not(found), tries,
            (0, False, window, keep))
        whole = tf.equal(mode, 0)
        return (i + 1, whole | found, tf.where(whole, window, win),
                tf.where(whole, keep, kp))

    n = tf.shape(boxes)[0]
    full = tf.constant([0.0, 0.0, 1.0, 1.0])
    _, _, window, keep = tf.while_loop(
        lambda i, done, *_: (i < MODE_DRAWS) & tf.logical_not(done), body,
        (0, False, full, tf.ones([n], bool)))
    boxes, labels = tf.boolean_mask(boxes, keep), tf.boolean_mask(labels, keep)
    boxes = tf.concat([tf.maximum(boxes[:, :2], window[:2]), tf.minimum(boxes[:, 2:],
                                                                        window[2:])], 1)
    wh = tf.concat([window[2:] - window[:2]] * 2, 0)
    boxes = (boxes - tf.concat([window[:2]] * 2, 0)) / wh
    shape = tf.cast(tf.shape(image)[:2], tf.float32)
    y0, x0 = tf.cast(window[1] * shape[0], tf.int32), tf.cast(window[0] * shape[1], tf.int32)
    y1, x1 = tf.cast(window[3] * shape[0], tf.int32), tf.cast(window[2] * shape[1], tf.int32)
    image = image[y0:tf.maximum(y1, y0 + 1), x0:tf.maximum(x1, x0 + 1)]
    return image, boxes, labels


def _colour_jitter(tf, image, seed):
    u = tf.random.stateless_uniform([4], seed=seed)
    image = image * (0.875 + 0.25 * u[0])
    image = tf.image.adjust_contrast(image, 0.5 + u[1])
    image = tf.image.adjust_saturation(image, 0.5 + u[2])
    image = tf.image.adjust_hue(image, -0.05 + 0.1 * u[3])
    return tf.clip_by_value(image, 0.0, 1.0)


def _finish(tf, image, boxes, labels, size: int, max_boxes: int, *extra):
    """Resize + normalise; drop degenerate boxes (and the same rows of `extra`), cut and pad
    every per-box array to max_boxes."""
    image = tf.image.resize(image, [size, size], method="bilinear")
    image = (image - MEAN) / STD
    ok = ((boxes[:, 2] - boxes[:, 0]) > 1e-4) & ((boxes[:, 3] - boxes[:, 1]) > 1e-4)
    out = []
    for x in (boxes, labels, *extra):
        x = tf.boolean_mask(x, ok)[:max_boxes]
        pad = [[0, max_boxes - tf.shape(x)[0]]] + [[0, 0]] * (len(x.shape) - 1)
        out.append(tf.pad(x, pad))
    return (image, *out)


def train_batches(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                  process_count: int) -> Iterator[dict[str, np.ndarray]]:
    """This process's share of every global train batch, from `start_step`, as numpy."""
    import tensorflow_datasets as tfds

    tf = tfds_coco.tensorflow()
    split = tfds.split_for_jax_process("train", process_index=process_index,
                                       process_count=process_count)
    size, m = int(config.data.image_size), int(config.data.max_boxes)
    local = config.data.global_batch_size // process_count
    max_samples = int(config.data.max_samples)

    def prep(index, ex):
        seed = tf.stack([tf.cast(config.run.seed, tf.int64), index])
        image = tf.image.convert_image_dtype(ex["image"], tf.float32)
        boxes, labels, _, _ = tfds_coco.objects(tf, ex)
        image, boxes, labels = ssd_crop(image, boxes, labels, seed, max_samples)
        flip = tf.random.stateless_uniform([], seed=seed + 1) < 0.5
        image = tf.where(flip, tf.image.flip_left_right(image), image)
        boxes = tf.where(flip, tf.stack([1 - boxes[:, 2], boxes[:, 1], 1 - boxes[:, 0],
                                         boxes[:, 3]], 1), boxes)
        image = _colour_jitter(tf, image, seed + 2)
        image, boxes, labels = _finish(tf, image, boxes, labels, size, m)
        return {"inputs": image, "boxes": boxes, "labels": labels}

    options = tf.data.Options()
    options.deterministic = True
    ds = tfds_coco.train_stream(config, split, 16 * local)  # per epoch, epochs unmixed
    ds = ds.enumerate().map(prep, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(local, drop_remainder=True).skip(start_step).prefetch(4).with_options(options)
    return iter(tfds.as_numpy(ds))


def eval_batches(config: ml_collections.ConfigDict, process_index: int, process_count: int
                 ) -> Iterator[dict[str, np.ndarray]]:
    """This process's eval batches (val2017 images with boxes), padded with mask 0."""
    import tensorflow_datasets as tfds

    tf = tfds_coco.tensorflow()
    b = tfds_coco.builder(config)
    split = tfds.split_for_jax_process(config.data.eval_split, process_index=process_index,
                                       process_count=process_count)
    ds = b.as_dataset(split=split).filter(tfds_coco.has_boxes)
    size, m = int(config.data.image_size), int(config.data.max_boxes)
    local = config.eval.batch_size // process_count

    def prep(ex):
        image = tf.image.convert_image_dtype(ex["image"], tf.float32)
        boxes, labels, crowd, area = tfds_coco.objects(tf, ex)
        shape = tf.cast(tf.shape(image)[:2], tf.float32)
        image, boxes, labels, crowd, area = _finish(tf, image, boxes, labels, size, m, crowd,
                                                    area)
        return {"inputs": image, "boxes": boxes, "labels": labels, "size": shape,
                "crowd": crowd, "area": area, "mask": tf.constant(1.0)}

    ds = ds.map(prep, num_parallel_calls=tf.data.AUTOTUNE).batch(local).prefetch(2)
    for batch in tfds.as_numpy(ds):
        n = len(batch["mask"])
        if n < local:
            batch = {k: np.concatenate([v, np.zeros((local - n,) + v.shape[1:], v.dtype)])
                     for k, v in batch.items()}
        yield batch
