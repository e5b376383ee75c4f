"""Trivial segmenters on the DeepLab mini's eval canvases, scored by the same mean IoU.

    python benchmarks/deeplab_baselines.py

- all background: every pixel class 0.
- ink + majority digit: ink pixels (above `canvas.INK`, which is exactly where the ground truth
  has a glyph) labelled with the most frequent digit of the train canvases' ink pixels: perfect
  background / foreground split, no classification.
- ink components + 1-NN: each 8-connected ink component (the SSD / Mask R-CNN baselines' rule)
  cropped, resized to 16x16 and labelled by its nearest train glyph (the 4,000 train glyphs
  resized the same way); all its ink pixels get that class: a non-deep segmenter that knows
  the digits, wrong only where glyphs touch or the neighbour is.

Prints the mean IoU of each (deterministic: the eval canvases are fixed).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from tpubench import config as config_lib
from tpubench.detection import canvas
from workloads.deeplab import input_pipeline, miou


def main() -> None:
    cfg = config_lib.load("deeplab", "mini")
    k = int(cfg.model.num_classes)
    spec = input_pipeline.spec_of(cfg)
    ev = input_pipeline.canvas_eval_set(spec, int(cfg.eval.samples))
    images, truth = ev["inputs"][..., 0], ev["label"]
    ink = images > canvas.INK

    def score(pred):
        return miou.mean_iou(miou.confusion_np(pred, truth, k), k)

    print(f"all background: {score(np.zeros_like(truth)):.4f}")
    train = input_pipeline.rows([[cfg.run.seed, 0, r] for r in range(2000)], "train", spec)
    counts = np.bincount(train["label"].ravel(), minlength=k)
    majority = int(np.argmax(counts[1:]) + 1)
    print(f"ink + majority digit (class {majority}): {score(np.where(ink, majority, 0)):.4f}")
    pool = canvas.glyphs()["train"]
    feats = np.stack([canvas._resize(g, 16, 16).ravel() for g, _ in pool])
    digits = np.array([d for _, d in pool])
    pred = np.zeros_like(truth)
    for i, img in enumerate(images):
        lab, _ = ndimage.label(img > canvas.INK, structure=np.ones((3, 3)))
        for j, sl in enumerate(ndimage.find_objects(lab), start=1):
            f = canvas._resize(img[sl], 16, 16).ravel()
            pred[i][lab == j] = digits[np.argmin(((feats - f) ** 2).sum(1))] + 1
    print(f"ink components + 1-NN: {score(pred):.4f}")
    print("per-class IoU of 1-NN:", np.round(miou.per_class_iou(
        miou.confusion_np(pred, truth, k), k), 3).tolist())


if __name__ == "__main__":
    main()
