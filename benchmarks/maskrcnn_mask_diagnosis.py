"""Where the Mask R-CNN mini's mask AP is lost: a trained run's checkpoint on its eval canvases,
scored as the run scores it and with each detection's 28 x 28 mask replaced by the ground truth
of the best-overlapping object (box IoU >= 0.5) cropped to the DETECTED box (`crop_to_box`):
the SEGM a perfect mask head would reach with these boxes.

    python benchmarks/maskrcnn_mask_diagnosis.py WORKDIR [KEY=VALUE ...]

KEY=VALUE: the run's config overrides (e.g. eval.samples=200). Prints BBOX, SEGM and the
oracle-mask SEGM.
"""

from __future__ import annotations

import ast
import sys

import jax
import numpy as np

from tpubench import config as config_lib
from tpubench import registry
from tpubench.datasets import canvas
from tpubench.detection import boxes as box_lib
from tpubench.detection import masks
from tpubench.evaluation import EvalResults
from tpubench.loops import checkpoint
from workloads.maskrcnn import input_pipeline


def main(workdir: str, overrides: dict) -> None:
    cfg = config_lib.load("maskrcnn", "mini", overrides)
    w = registry.create(cfg)
    params, state = checkpoint.restore_variables(workdir, w)
    n, crop = int(cfg.eval.samples), int(cfg.data.gt_mask_size)
    ev = input_pipeline.canvas_eval_set(canvas.CanvasSpec.of_config(cfg), n, crop)
    step = jax.jit(w.eval_step)
    outs = []
    for i in range(0, n, int(cfg.eval.batch_size)):
        batch = {k: v[i:i + int(cfg.eval.batch_size)] for k, v in ev.items()}
        batch["mask"] = np.ones(len(batch["labels"]), np.float32)
        outs.append(jax.device_get(step(params, state, batch).per_example))
    p = {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}
    print("as scored:", w.eval_finalize(EvalResults({}, p, float(n))))
    size = float(cfg.data.image_size)
    oracle = np.zeros_like(p["det_masks"])
    for i in range(n):
        real = np.nonzero(p["gt_labels"][i] > 0)[0]
        for k in np.nonzero(p["det_labels"][i] > 0)[0]:
            iou = np.asarray(box_lib.iou(p["det_boxes"][i, k][None] * size,
                                         p["gt_boxes"][i, real] * size))[0]
            if iou.max() >= 0.5:
                j = real[int(iou.argmax())]
                oracle[i, k] = masks.crop_to_box(p["gt_masks"][i, j],
                                                 p["det_boxes"][i, k] * size, 28)
    print("oracle masks in the detected boxes:",
          w.eval_finalize(EvalResults({}, {**p, "det_masks": oracle}, float(n))))


if __name__ == "__main__":
    main(sys.argv[1], {k: ast.literal_eval(v) for k, v in (a.split("=", 1) for a in sys.argv[2:])})
