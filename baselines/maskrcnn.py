"""Trivial instance segmenters on the Mask R-CNN mini's eval canvases, scored by the same
pycocotools box AP and mask AP.

    python baselines/maskrcnn.py

- ink components + class prior: each connected ink component (the SSD baselines' rule,
  baselines/ssd.py) as a box, its ink pixels as the mask, once per class with the
  class's train frequency as score: perfect localisation and masks for glyphs that do not touch,
  no classification.
- ink components + 1-NN: the same boxes and masks, classified by the nearest train glyph.

Prints BBOX and SEGM of each (deterministic: the eval canvases are fixed).
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import ndimage
from ssd import CLASSES, nearest_glyph  # the sibling baselines/ssd.py

from tpubench import config as config_lib
from tpubench.datasets import canvas
from tpubench.detection import coco_eval, masks
from workloads.maskrcnn import input_pipeline


def _components(image: np.ndarray):
    lab, _ = ndimage.label(image[..., 0] > canvas.INK, structure=np.ones((3, 3)))
    return [((s[1].start, s[0].start, s[1].stop, s[0].stop), lab == i + 1)
            for i, s in enumerate(ndimage.find_objects(lab))]


def _score(ev, dets, size: int) -> tuple[float, float]:
    n, k = len(ev["labels"]), max(1, max(len(d) for d in dets))
    b, s = np.zeros((n, k, 4)), np.zeros((n, k))
    lab = np.zeros((n, k), np.int64)
    det_rles, gt_rles = [], []
    for i, d in enumerate(dets):
        det_rles.append({})
        for j, (box, mask, score, label) in enumerate(d):
            b[i, j], s[i, j], lab[i, j] = np.asarray(box) / size, score, label
            det_rles[i][j] = masks.encode_rle(mask)
        gt_rles.append({j: masks.encode_rle(ev["gt_masks"][i, j])
                        for j in np.nonzero(ev["labels"][i] > 0)[0]})
    bbox, segm = coco_eval.coco_box_mask_stats(
        ev["size"], ev["boxes"] / size, ev["labels"], gt_rles, b, s, lab, det_rles, CLASSES,
        gt_crowd=ev["crowd"], gt_area=ev["area"])
    return bbox[0], segm[0]


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    cfg = config_lib.load("maskrcnn", "mini")
    spec = canvas.CanvasSpec.of_config(cfg)
    ev = input_pipeline.canvas_eval_set(spec, int(cfg.eval.samples), int(cfg.data.gt_mask_size))
    size = spec.size
    train = canvas.batch([cfg.run.seed, 0], 2000, "train", spec)
    tl = train["labels"][train["labels"] > 0]
    prior = np.bincount(tl, minlength=CLASSES) / len(tl)
    comps = [_components(img) for img in ev["inputs"]]
    dets = [[(bx, m, prior[c], c) for bx, m in cs for c in range(1, CLASSES)] for cs in comps]
    print("ink components + class prior: BBOX {:.4f} SEGM {:.4f}".format(*_score(ev, dets, size)))
    classify = nearest_glyph()
    dets = []
    for img, cs in zip(ev["inputs"], comps, strict=True):
        out = []
        for box, m in cs:
            out.append((box, m, 1.0, classify(img, box)))
        dets.append(out)
    print("ink components + 1-NN: BBOX {:.4f} SEGM {:.4f}".format(*_score(ev, dets, size)))


if __name__ == "__main__":
    main()
