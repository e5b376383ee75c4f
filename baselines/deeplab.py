"""Trivial segmenters on the DeepLab mini's eval canvases, scored by the same mean IoU.

    python baselines/deeplab.py

- all background: every pixel class 0.
- ink + majority digit: ink pixels (above `canvas.INK`, which is exactly where the ground truth
  has a glyph) labelled with the most frequent digit of the train canvases' ink pixels: perfect
  background / foreground split, no classification.
- ink components + 1-NN: each 8-connected ink component (the SSD / Mask R-CNN baselines' rule)
  cropped, resized to 16x16 and labelled by its nearest train glyph (the 4,000 train glyphs
  resized the same way); all its ink pixels get that class: a non-deep segmenter that knows
  the digits, wrong only where glyphs touch or the neighbour is.

Prints the mean IoU of each (deterministic: the eval canvases are fixed).

    python baselines/deeplab.py --decoder-ceiling

adds what a stride-4 output map (the mini's 16x16 decoder map at 64 px) can express: free
per-image 16x16 logits fitted by Adam (lr 0.3, 400 steps) to the first 200 eval label maps,
upsampled and argmaxed as the model's (`model.labels`); an upper bound of the head, not a
segmenter (it sees the labels).
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import ndimage

from tpubench import config as config_lib
from tpubench.datasets import canvas
from workloads.deeplab import input_pipeline, miou, model


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


def decoder_ceiling(truth: np.ndarray, k: int, stride: int = 4, steps: int = 400) -> float:
    """mIoU of free [N, S/stride, S/stride, k] logits fitted to `truth` [N, S, S] (see top)."""
    import jax
    import jax.numpy as jnp
    import optax

    n, s = truth.shape[0], truth.shape[1]
    labels = jnp.asarray(truth)
    opt = optax.adam(0.3)

    def loss(z):
        up = model.resize_bilinear(z, (s, s))
        return optax.softmax_cross_entropy_with_integer_labels(up, labels).mean()

    @jax.jit
    def step(z, state):
        g = jax.grad(loss)(z)
        u, state = opt.update(g, state)
        return optax.apply_updates(z, u), state

    z = jnp.zeros((n, s // stride, s // stride, k))
    state = opt.init(z)
    for _ in range(steps):
        z, state = step(z, state)
    pred = np.asarray(model.labels(z, (s, s)))
    return miou.mean_iou(miou.confusion_np(pred, truth, k), k)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decoder-ceiling", action="store_true",
                        help="what a stride-4 output map can express (see above)")
    if parser.parse_args().decoder_ceiling:
        cfg = config_lib.load("deeplab", "mini")
        ev = input_pipeline.canvas_eval_set(input_pipeline.spec_of(cfg), int(cfg.eval.samples))
        print("free stride-4 logits (200 eval canvases): "
              f"{decoder_ceiling(ev['label'][:200], int(cfg.model.num_classes)):.4f}")
    else:
        main()
