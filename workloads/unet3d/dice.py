"""Mean Dice as the v0.7 3d-unet accuracy script computes it (accuracy-brats.py, which runs
nnU-Net's `evaluate_regions(..., get_brats_regions())`): per case and per region, Dice =
2|P & G| / (|P| + |G|) of the region masks (medpy `dc`), NaN when the region is empty in both
prediction and truth; per region the mean over cases ignoring NaN (the "mean" row of
summary.csv); the result the mean of the regions' means.

The voxel counts (|P & G|, |P|, |G| per case and region) are reduced on device (`counts`); the
division and the means happen on the host in float64 (`mean_dice`), from the same integer
counts whether they come from the training eval or from LoadGen's accuracy log, so both give
the same figure, bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import numpy as np

# nnunet.evaluation.region_based_evaluation.get_brats_regions, on the nnU-Net label convention
# of Task043_BraTS_2019.py (0 background, 1 edema, 2 non-enhancing tumour, 3 enhancing tumour).
BRATS_REGIONS = {"whole tumor": (1, 2, 3), "tumor core": (2, 3), "enhancing tumor": (3,)}
IGNORE = -1  # label of voxels outside the case (the reference's padding to 224x224x160)


def regions_of(config) -> dict[str, tuple[int, ...]]:
    """The config's regions: `eval.regions` ("brats") or one region per tissue class."""
    if config.eval.regions == "brats":
        return dict(BRATS_REGIONS)
    names = tuple(config.eval.class_names)
    return {names[k]: (k,) for k in range(1, len(names))}


def _masks(x, region: Sequence[int], xp):
    m = x == region[0]
    for k in region[1:]:
        m = m | (x == k)
    return m


def counts(pred, label, regions: Mapping[str, Sequence[int]]):
    """On device: [B, R, 3] float32 (intersection, predicted, true voxels) per example and
    region; voxels labelled IGNORE count nowhere. Exact integers up to 2^24 voxels a case."""
    valid = label != IGNORE
    axes = tuple(range(1, pred.ndim))
    rows = []
    for region in regions.values():
        p = _masks(pred, region, jnp) & valid
        g = _masks(label, region, jnp)
        rows.append(jnp.stack([jnp.sum(p & g, axes), jnp.sum(p, axes), jnp.sum(g, axes)], -1))
    return jnp.stack(rows, 1).astype(jnp.float32)


def counts_np(pred: np.ndarray, label: np.ndarray,
              regions: Mapping[str, Sequence[int]]) -> np.ndarray:
    """The same counts on the host (int64), for predictions read back from LoadGen's log."""
    valid = label != IGNORE
    axes = tuple(range(1, pred.ndim))
    rows = []
    for region in regions.values():
        p = _masks(pred, region, np) & valid
        g = _masks(label, region, np)
        rows.append(np.stack([(p & g).sum(axes), p.sum(axes), g.sum(axes)], -1))
    return np.stack(rows, 1).astype(np.int64)


def per_region_dice(counts_: np.ndarray) -> np.ndarray:
    """[R]: per region the mean over cases of Dice, NaN cases (both empty) left out."""
    c = np.asarray(counts_).astype(np.int64).astype(np.float64)
    inter, pred, true = c[..., 0], c[..., 1], c[..., 2]
    denom = pred + true
    with np.errstate(invalid="ignore", divide="ignore"):
        dice = np.where(denom > 0, 2.0 * inter / denom, np.nan)
    with np.errstate(invalid="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(dice, axis=0)


def mean_dice(counts_: np.ndarray) -> float:
    """The accuracy script's "mean": the average of the regions' mean Dice."""
    return float(np.mean(per_region_dice(counts_)))
