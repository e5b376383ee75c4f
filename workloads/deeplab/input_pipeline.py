"""DeepLab mini inputs: canvas digits (`tpubench.datasets.canvas`, the SSD and Mask R-CNN
minis' canvases: 64x64, 1-4 real MNIST-5k glyphs) with a per-pixel class map: 0 background,
digit + 1 on each glyph's ink pixels (the glyph mask: pasted intensity above `canvas.INK`);
where two glyphs' ink overlaps (boxes overlap by at most 0.1 IoU), the later-pasted glyph's
class wins.

Batches: {"inputs" [B, S, S, 1] float32 in [0, 1], "label" [B, S, S] int32}; eval adds "mask".
Train canvases are fresh for every (seed, step, row) from the 4,000 train glyphs; the eval set
is the Mask R-CNN mini's fixed canvases from the 1,000 held-out glyphs (same seed and split).
"""

from __future__ import annotations

import functools

import ml_collections
import numpy as np

from tpubench.datasets import canvas
from tpubench.loops import feed as data


def spec_of(config: ml_collections.ConfigDict) -> canvas.CanvasSpec:
    """The canvas spec of a deeplab config (`data.image_size`, `data.canvas_*`)."""
    d = config.data
    return canvas.CanvasSpec(size=int(d.image_size), min_objects=int(d.canvas_min_objects),
                             max_objects=int(d.canvas_max_objects),
                             min_glyph=int(d.canvas_min_glyph), max_glyph=int(d.canvas_max_glyph),
                             max_boxes=int(d.canvas_max_objects))


def class_map(labels: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """[S, S] int32: 0, or the label of the last glyph whose mask covers the pixel."""
    out = np.zeros(masks.shape[1:], np.int32)
    for lab, m in zip(labels, masks, strict=True):
        if lab > 0:
            out[m] = lab
    return out


def rows(seeds, split: str, spec: canvas.CanvasSpec) -> dict[str, np.ndarray]:
    """One canvas per seed (`np.random.default_rng(seed)`) with its class map."""
    pool = canvas.glyphs()[split]
    images, maps = [], []
    for sd in seeds:
        image, _, labels, masks = canvas.draw_with_masks(np.random.default_rng(sd), pool, spec)
        images.append(image)
        maps.append(class_map(labels, masks))
    return {"inputs": np.stack(images), "label": np.stack(maps)}


def canvas_train(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                 process_count: int):
    """Row r of global step t from rng([seed, t, r]); this process's contiguous slice."""
    spec = spec_of(config)
    local = int(config.data.global_batch_size) // process_count
    step = start_step
    while True:
        r = range(process_index * local, (process_index + 1) * local)
        yield rows([[config.run.seed, step, i] for i in r], "train", spec)
        step += 1


@functools.lru_cache(maxsize=2)
def canvas_eval_set(spec: canvas.CanvasSpec, samples: int) -> dict[str, np.ndarray]:
    """The fixed eval canvases (rng([EVAL_SEED, r]) on the held-out glyphs)."""
    b = rows([[canvas.EVAL_SEED, r] for r in range(samples)], "test", spec)
    for v in b.values():
        v.setflags(write=False)
    return b


def canvas_eval(config: ml_collections.ConfigDict, process_index: int, process_count: int):
    """The eval canvases in order, padded with mask 0."""
    arrays = canvas_eval_set(spec_of(config), int(config.eval.samples))
    return data.in_memory_eval_batches(arrays, config.eval.batch_size, process_index,
                                       process_count)
