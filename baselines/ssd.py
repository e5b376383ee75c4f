"""Trivial detectors on the SSD mini's eval canvases, scored by the same pycocotools mAP.

    python baselines/ssd.py

- prior boxes: no look at the image. Boxes of the train set's median glyph size on a grid
  covering the canvas, each once per class with the class's train frequency as its score.
- ink components + class prior: the boxes of the image's connected ink components (threshold
  0.25, 8-connected; exact for glyphs that do not touch), each once per class with the class's
  train frequency as its score: perfect localisation, no classification.
- ink components + 1-NN: the same boxes, each crop resized to 16x16 and classified by its
  nearest train glyph (the 4,000 train glyphs resized the same way), score 1: a non-deep
  detector that knows the digits.

Prints the mAP of each (deterministic: the eval canvases are fixed).
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import ndimage

from tpubench import config as config_lib
from tpubench.datasets import canvas
from tpubench.detection import coco_eval
from workloads.ssd import input_pipeline

CLASSES = 11


def _components(image: np.ndarray) -> list[tuple[int, int, int, int]]:
    lab, _ = ndimage.label(image[..., 0] > canvas.INK, structure=np.ones((3, 3)))
    return [(s[1].start, s[0].start, s[1].stop, s[0].stop) for s in ndimage.find_objects(lab)]


def nearest_glyph():
    """A classifier of an ink box: the class (digit + 1) of the nearest train glyph, both
    resized to 16x16 (the strongest trivial classifier of the canvas minis' objects)."""
    pool = canvas.glyphs()["train"]
    feats = np.stack([canvas._resize(g, 16, 16).ravel() for g, _ in pool])
    digits = np.array([d for _, d in pool])

    def classify(image: np.ndarray, box: tuple[int, int, int, int]) -> int:
        x0, y0, x1, y1 = box
        f = canvas._resize(image[y0:y1, x0:x1, 0], 16, 16).ravel()
        return int(digits[np.argmin(((feats - f) ** 2).sum(1))] + 1)

    return classify


def _evaluate(ev, dets, size) -> float:
    n, k = len(ev["labels"]), max(len(d) for d in dets)
    b = np.zeros((n, k, 4))
    s = np.zeros((n, k))
    lab = np.zeros((n, k), np.int64)
    for i, d in enumerate(dets):
        for j, (box, score, label) in enumerate(d):
            b[i, j], s[i, j], lab[i, j] = np.asarray(box) / size, score, label
    return coco_eval.coco_map(ev["size"], ev["boxes"], ev["labels"], b, s, lab, CLASSES,
                              gt_crowd=ev["crowd"], gt_area=ev["area"])


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    cfg = config_lib.load("ssd", "mini")
    spec = canvas.CanvasSpec.of_config(cfg)
    ev = input_pipeline.canvas_eval_set(spec, int(cfg.eval.samples))
    train = canvas.batch([cfg.run.seed, 0], 2000, "train", spec)
    tb, tl = train["boxes"][train["labels"] > 0], train["labels"][train["labels"] > 0]
    prior = np.bincount(tl, minlength=CLASSES) / len(tl)
    size = spec.size
    mw, mh = np.median((tb[:, 2] - tb[:, 0]) * size), np.median((tb[:, 3] - tb[:, 1]) * size)
    grid = [(x, y, x + mw, y + mh) for y in np.arange(0, size - mh + 1, mh / 2)
            for x in np.arange(0, size - mw + 1, mw / 2)]
    dets = [[(g, prior[c], c) for g in grid for c in range(1, CLASSES)]
            for _ in range(len(ev["labels"]))]
    print(f"prior boxes ({len(grid)} per class, {mw:.0f}x{mh:.0f} px): "
          f"mAP {_evaluate(ev, dets, size):.4f}")
    comps = [_components(img) for img in ev["inputs"]]
    dets = [[(c, prior[k], k) for c in cs for k in range(1, CLASSES)] for cs in comps]
    print(f"ink components + class prior: mAP {_evaluate(ev, dets, size):.4f}")
    classify = nearest_glyph()
    dets = []
    for img, cs in zip(ev["inputs"], comps, strict=True):
        out = []
        for box in cs:
            out.append((box, 1.0, classify(img, box)))
        dets.append(out or [((0, 0, 1, 1), 0.0, 0)])
    print(f"ink components + 1-NN: mAP {_evaluate(ev, dets, size):.4f}")


if __name__ == "__main__":
    main()
