"""Mask R-CNN inputs: canvas digits with instance masks (the mini; `tpubench.datasets.canvas`).

Batches: train {"inputs" [B, H, W, C], "boxes" [B, M, 4] exclusive PIXEL ltrb of the padded
input, "labels" [B, M] int32 (0 = padding), "image_hw" [B, 2] (the image's height and width
inside the padded input: proposals are clipped to it), "mask_crops" [B, M, S, S] (each
instance's mask cut to its own box at S x S, `masks.crop_to_box`)}; eval adds "size" [B, 2]
(the original height, width), "crowd", "area" (the mask's pixel count, COCO's area) and
"gt_masks" [B, M, H, W] uint8 (the full masks pycocotools scores segm against), and "mask".

Train canvases are fresh for every (seed, step, row) from the train glyphs; the eval set is
fixed, from the held-out glyphs (the SSD mini's split and seeds: `canvas.EVAL_SEED`).
"""

from __future__ import annotations

import functools

import ml_collections
import numpy as np

from tpubench.datasets import canvas
from tpubench.detection import masks
from tpubench.loops import feed as data


def _rows(seeds, pool, spec: canvas.CanvasSpec, crop: int) -> dict[str, np.ndarray]:
    out = [canvas.draw_with_masks(np.random.default_rng(sd), pool, spec) for sd in seeds]
    s = float(spec.size)
    boxes = np.stack([o[1] for o in out]) * s
    full = np.stack([o[3] for o in out])
    crops = np.zeros(full.shape[:2] + (crop, crop), np.float32)
    labels = np.stack([o[2] for o in out])
    for i, j in zip(*np.nonzero(labels > 0), strict=True):
        crops[i, j] = masks.crop_to_box(full[i, j], boxes[i, j], crop)
    return {"inputs": np.stack([o[0] for o in out]), "boxes": boxes.astype(np.float32),
            "labels": labels, "image_hw": np.full((len(out), 2), s, np.float32),
            "mask_crops": crops, "_full": full}


def canvas_train(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                 process_count: int):
    """Row r of global step t from rng([seed, t, r]); this process's contiguous slice."""
    spec = canvas.CanvasSpec.of_config(config)
    local = int(config.data.global_batch_size) // process_count
    crop = int(config.data.gt_mask_size)
    pool = canvas.glyphs()["train"]
    step = start_step
    while True:
        rows = range(process_index * local, (process_index + 1) * local)
        b = _rows([[config.run.seed, step, r] for r in rows], pool, spec, crop)
        b.pop("_full")
        yield b
        step += 1


@functools.lru_cache(maxsize=2)
def canvas_eval_set(spec: canvas.CanvasSpec, samples: int, crop: int) -> dict[str, np.ndarray]:
    """The fixed eval canvases with the pycocotools fields."""
    b = _rows([[canvas.EVAL_SEED, r] for r in range(samples)], canvas.glyphs()["test"], spec, crop)
    full = b.pop("_full")
    b["gt_masks"] = full.astype(np.uint8)
    b["size"] = np.full((samples, 2), float(spec.size), np.float32)
    b["crowd"] = np.zeros(b["labels"].shape, np.int32)
    b["area"] = full.sum((2, 3)).astype(np.float32)
    for v in b.values():
        v.setflags(write=False)
    return b


def canvas_eval(config: ml_collections.ConfigDict, process_index: int, process_count: int):
    """The eval canvases in order, padded with mask 0."""
    arrays = canvas_eval_set(canvas.CanvasSpec.of_config(config), int(config.eval.samples),
                             int(config.data.gt_mask_size))
    return data.in_memory_eval_batches(arrays, config.eval.batch_size, process_index,
                                       process_count)
