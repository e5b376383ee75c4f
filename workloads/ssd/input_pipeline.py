"""SSD inputs: the canvas digits (the mini, `tpubench.datasets.canvas`) and COCO 2017 through
tfds (the full config, `workloads/ssd/coco.py`).

Batches: train {"inputs" [B, H, W, C], "boxes" [B, M, 4] normalised ltrb, "labels" [B, M]
int32 (0 = padding)}; eval adds "size" [B, 2] (the original height, width in pixels), "crowd"
[B, M] and "area" [B, M] (what pycocotools needs) and "mask". Matching the boxes to the default
boxes happens on device, in the loss.
"""

from __future__ import annotations

import functools

import ml_collections
import numpy as np

from tpubench.datasets import canvas
from tpubench.loops import feed as data


def canvas_train(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                 process_count: int):
    """Fresh canvases every step: row r of global step t is drawn from rng([seed, t, r]) out of
    the train glyphs; this process yields its contiguous slice of every global batch."""
    spec = canvas.CanvasSpec.of_config(config)
    glob = int(config.data.global_batch_size)
    local = glob // process_count
    step = start_step
    while True:
        rows = range(process_index * local, (process_index + 1) * local)
        pool = canvas.glyphs()["train"]
        out = [canvas.draw(np.random.default_rng([config.run.seed, step, r]), pool, spec)
               for r in rows]
        yield {"inputs": np.stack([o[0] for o in out]), "boxes": np.stack([o[1] for o in out]),
               "labels": np.stack([o[2] for o in out])}
        step += 1


@functools.lru_cache(maxsize=2)
def canvas_eval_set(spec: canvas.CanvasSpec, samples: int) -> dict[str, np.ndarray]:
    """The fixed eval canvases (held-out glyphs), with the pycocotools fields."""
    b = canvas.batch([canvas.EVAL_SEED], samples, "test", spec)
    s = float(spec.size)
    wh = (b["boxes"][..., 2:] - b["boxes"][..., :2]) * s
    b["size"] = np.full((samples, 2), s, np.float32)
    b["crowd"] = np.zeros(b["labels"].shape, np.int32)
    b["area"] = (wh[..., 0] * wh[..., 1] * (b["labels"] > 0)).astype(np.float32)
    for v in b.values():
        v.setflags(write=False)
    return b


def canvas_eval(config: ml_collections.ConfigDict, process_index: int, process_count: int):
    """The eval canvases in order, padded with mask 0."""
    arrays = canvas_eval_set(canvas.CanvasSpec.of_config(config), int(config.eval.samples))
    return data.in_memory_eval_batches(arrays, config.eval.batch_size, process_index,
                                       process_count)
