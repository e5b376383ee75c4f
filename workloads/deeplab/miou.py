"""Mean IoU as the MLPerf mobile deeplabv3 reference scores it (mlcommons/mobile_open
`vision/deeplab/models_and_code/eval.py`): `tf.metrics.mean_iou` over `num_classes` classes on
a confusion matrix accumulated over every pixel of the eval set, with the ignore label's pixels
weighted 0 (ADE20K: label 0). Per class IoU = diagonal / (row sum + column sum - diagonal),
rows = labels, columns = predictions; the mean is over the classes whose denominator is not 0
(`tf.metrics.mean_iou`'s `num_valid_entries`), so a class absent from both labels and
predictions is left out, and a class predicted but never labelled counts with IoU 0.

The confusion counts of each image are computed on device (`confusion`, int32); they are summed
over images on the host in int64 (`mean_iou`), from the same integers whether they come from the
training eval or from LoadGen's accuracy log (`confusion_np`), so both give the same figure, bit
for bit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

NO_IGNORE = -1


def confusion(pred, label, num_classes: int, ignore_label: int = NO_IGNORE):
    """On device: [B, K*K] int32 per image, entry l*K + p = pixels labelled l predicted p;
    pixels labelled `ignore_label` count nowhere."""
    k = num_classes
    b = pred.shape[0]
    valid = (label != ignore_label).astype(jnp.int32).reshape(b, -1)
    safe = jnp.where(label == ignore_label, 0, label)
    idx = (safe * k + jnp.clip(pred, 0, k - 1)).reshape(b, -1)
    return jax.vmap(lambda i, w: jnp.bincount(i, weights=w, length=k * k))(idx, valid).astype(
        jnp.int32)


def confusion_np(pred: np.ndarray, label: np.ndarray, num_classes: int,
                 ignore_label: int = NO_IGNORE) -> np.ndarray:
    """The same [N, K*K] counts on the host (int64)."""
    k = num_classes
    n = pred.shape[0]
    out = np.zeros((n, k * k), np.int64)
    for i in range(n):
        lab, p = label[i].reshape(-1), pred[i].reshape(-1).astype(np.int64)
        keep = lab != ignore_label
        out[i] = np.bincount(lab[keep] * k + p[keep], minlength=k * k)
    return out


def per_class_iou(counts: np.ndarray, num_classes: int) -> np.ndarray:
    """[K] IoU of each class over all images (NaN where the denominator is 0)."""
    cm = np.asarray(counts, np.int64).reshape(-1, num_classes, num_classes).sum(0)
    diag = np.diag(cm).astype(np.float64)
    denom = cm.sum(0) + cm.sum(1) - np.diag(cm)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, diag / np.maximum(denom, 1), np.nan)


def mean_iou(counts: np.ndarray, num_classes: int) -> float:
    """`tf.metrics.mean_iou` of the summed confusion counts [N, K*K]."""
    iou = per_class_iou(counts, num_classes)
    valid = ~np.isnan(iou)
    return float(iou[valid].sum() / max(int(valid.sum()), 1))
