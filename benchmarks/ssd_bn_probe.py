"""Batch-norm probe for the SSD minis: is a low eval mAP the weights or the running statistics?

    python benchmarks/ssd_bn_probe.py mobilenet_v2_mini 125 model.bn_momentum=0.999
    # a run's weights (that run: the v1 mini at its former width 0.25)
    python benchmarks/ssd_bn_probe.py mobilenet_v1_mini /tmp/ssd_runs/v1_s0 model.width=0.25

Trains CONFIG for STEPS steps with the harness's own train step (`tpubench.loops.steps`), init
(`PRNGKey(run.seed)`, as the engine) and train canvases (not bit for bit a harness run's
trajectory: measured, the same loss at step 1, not at step 26); then scores the weights on
the 500 eval canvases (pycocotools mAP, the workload's eval) three ways: eval mode (the
running statistics), train-mode batch norm (the eval batch's statistics), and eval mode after
recomputing the running statistics on 256 fresh train canvases (momentum 0); and prints how
far train- and eval-mode outputs on a train batch differ (relative L2 norm). Given a run's
workdir instead of STEPS, scores the weights of its latest checkpoint
(`tpubench.loops.checkpoint.restore_variables`) the same three ways. Overrides are
KEY=VALUE config keys (numbers parsed as floats or ints).

Measured (session 2026-12-02b, seed 0, this procedure run from a scratch copy with the same
computations): mobilenet_v2_mini at bn_momentum 0.999, step 125: eval mode 0.0001, train-mode
BN 0.0393, recomputed statistics 0.0390; logits differ by 93%, box offsets by 99%.
"""

from __future__ import annotations

import ast
import sys

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.datasets import canvas
from tpubench.detection import nms
from tpubench.evaluation import EvalResults
from tpubench.loops import checkpoint
from tpubench.loops import steps as steps_lib
from workloads.ssd import input_pipeline


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def main(name: str, steps_or_workdir: str, overrides: dict) -> None:
    cfg = config_lib.load("ssd", name, overrides)
    w = registry.create(cfg)
    it = input_pipeline.canvas_train(cfg, 0, 0, 1)
    if steps_or_workdir.isdigit():
        state = nn.meta.unbox(steps_lib.boxed_init_fn(w)(jax.random.PRNGKey(int(cfg.run.seed))))
        step = jax.jit(steps_lib.make_train_step(w))
        n = int(steps_or_workdir)
        for i in range(n):
            state, m = step(state, next(it))
            if i % 25 == 0 or i == n - 1:
                print(i + 1, {k: round(float(v), 3) for k, v in m.items()}, flush=True)
        p, ms = state.params, state.model_state
    else:
        p, ms = checkpoint.restore_variables(steps_or_workdir, w)
    samples, bs = int(cfg.eval.samples), int(cfg.eval.batch_size)
    ev = input_pipeline.canvas_eval_set(canvas.CanvasSpec.of_config(cfg), samples)
    model, e = w.model(), cfg.eval

    def detect(params, model_state, b, train_bn):
        if not train_bn:
            return w.eval_step(params, model_state, b).per_example
        (off, logits), _ = model.apply({"params": params, **model_state}, b["inputs"],
                                       train=True, mutable=["batch_stats"])
        db, ds, dl = nms.detect_batch(
            off, logits, jnp.asarray(w.anchors_xywh), score_threshold=float(e.score_threshold),
            iou_threshold=float(e.nms_iou), max_per_class=int(e.max_per_class),
            max_detections=int(e.max_detections))
        return {"det_boxes": db, "det_scores": ds, "det_labels": dl, "gt_boxes": b["boxes"],
                "gt_labels": b["labels"], "gt_crowd": b["crowd"], "gt_area": b["area"],
                "size": b["size"]}

    def evaluate(params, model_state, train_bn=False):
        per: dict[str, list] = {}
        for s in range(0, samples, bs):
            b = {k: jnp.asarray(v[s:s + bs]) for k, v in ev.items()}
            for k, v in detect(params, model_state, b, train_bn).items():
                per.setdefault(k, []).append(np.asarray(v))
        cat = {k: np.concatenate(v) for k, v in per.items()}
        return w.eval_finalize(EvalResults(sums={}, per_example=cat, examples=float(samples)))

    print("mAP eval mode (running statistics):", round(evaluate(p, ms), 4))
    print("mAP train-mode BN (eval batch statistics):", round(evaluate(p, ms, True), 4))
    big = np.concatenate([next(it)["inputs"] for _ in range(8)])
    _, new = model.clone(bn_momentum=0.0).apply({"params": p, **ms}, big, train=True,
                                                mutable=["batch_stats"])
    print("mAP running statistics recomputed on 256 train canvases:",
          round(evaluate(p, {**ms, **new}), 4))
    x = next(it)["inputs"]
    (o1, l1), _ = model.apply({"params": p, **ms}, x, train=True, mutable=["batch_stats"])
    o2, l2 = model.apply({"params": p, **ms}, x, train=False)
    print("train vs eval mode, relative difference: logits",
          float(jnp.linalg.norm(l1 - l2) / jnp.linalg.norm(l1)),
          "offsets", float(jnp.linalg.norm(o1 - o2) / jnp.linalg.norm(o1)))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2],
         {k: _value(v) for k, v in (a.split("=", 1) for a in sys.argv[3:])})
