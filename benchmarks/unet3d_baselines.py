"""Trivial per-voxel segmenters of the unet3d mini (MNI ICBM152 at 2 mm), scored on the mini's 55
eval crops by the same mean Dice (workloads/unet3d/dice.py: per crop, per tissue class, NaN when
both empty, mean over crops, then over the three classes).

    python benchmarks/unet3d_baselines.py

- majority tissue: every brain voxel (T1 > 0, which gives the outside class exactly) labelled
  grey matter, the most frequent tissue.
- intensity thresholds: a decision tree (at most 8 leaves) on the normalised T1 intensity of a
  voxel, fit on every voxel of the training region (y < 60): the best thresholding of the
  intensity.
- intensity + neighbourhood: gradient-boosted trees (sklearn HistGradientBoostingClassifier) on
  the voxel's intensity and its 3^3, 5^3 and 9^3 box means (computed on the whole volume, so near
  the split they see a little more than a crop does: favours the baseline), fit on the training
  region: a per-voxel classifier with local context.

Prints the mean Dice and the per-class Dice of each (deterministic).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.tree import DecisionTreeClassifier

from tpubench import config as config_lib
from workloads.unet3d import dice, mni


def score(pred_volume: np.ndarray, crop: int, regions) -> tuple[float, np.ndarray]:
    """Mean Dice of a whole-volume prediction over the eval crops."""
    _, labels = mni.load()
    preds, truth = [], []
    for cx, cy, cz in mni.eval_corners(crop):
        sl = (slice(cx, cx + crop), slice(cy, cy + crop), slice(cz, cz + crop))
        preds.append(pred_volume[sl])
        truth.append(labels[sl])
    counts = dice.counts_np(np.stack(preds), np.stack(truth), regions)
    return dice.mean_dice(counts), dice.per_region_dice(counts)


def main() -> None:
    cfg = config_lib.load("unet3d", "mini", {})
    regions = dice.regions_of(cfg)
    crop = int(cfg.data.crop_size)
    image, labels = mni.load()
    t1 = image[..., 0]
    brain = t1 != 0
    train = np.zeros_like(brain)
    train[:, : mni.TRAIN_Y_END] = True

    majority = np.where(brain, 2, 0)
    results = {"majority tissue (grey matter)": majority}

    def fit_predict(features: np.ndarray, clf) -> np.ndarray:
        sel = train & brain
        clf.fit(features[sel], labels[sel])
        pred = np.zeros_like(labels)
        pred[brain] = clf.predict(features[brain])
        return pred

    results["intensity thresholds (tree, 8 leaves)"] = fit_predict(
        t1[..., None], DecisionTreeClassifier(max_leaf_nodes=8, random_state=0))
    feats = np.stack([t1] + [ndimage.uniform_filter(t1, k) for k in (3, 5, 9)], -1)
    results["intensity + 3/5/9 box means (gradient-boosted trees)"] = fit_predict(
        feats, HistGradientBoostingClassifier(random_state=0))
    for name, pred in results.items():
        mean, per = score(pred, crop, regions)
        print(f"{name}: mean Dice {mean:.4f} (" + ", ".join(
            f"{r} {v:.4f}" for r, v in zip(regions, per, strict=True)) + ")")


if __name__ == "__main__":
    main()
