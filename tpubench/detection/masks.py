"""Instance masks for Mask R-CNN: the training targets on device, the pasting into the image and
the RLE encoding (pycocotools) on the host.

Ground-truth masks travel as box crops: each instance's mask cut to its own (exclusive) box and
resampled to S x S (`crop_to_box`, host side), a fixed shape whatever the image size, as TPU
implementations of Mask R-CNN feed them. The target of a proposal (`targets`) is that crop
RoIAligned onto the proposal's box at 28 x 28 and thresholded at 0.5: what the reference's
`project_masks_on_boxes` (mlcommons/training object_detection/pytorch/maskrcnn_benchmark/
modeling/roi_heads/mask_head/loss.py, v0.7) makes by cropping the instance's polygons to the
proposal and rasterising them at 28 x 28 (here from a bitmap: equal up to the resampling).

Pasting (`paste`) is the reference's `Masker` (mask_head/inference.py): the 28 x 28 probabilities
padded by one pixel (30 x 30) on a box grown by 30 / 28, resized bilinearly (align_corners=False)
to the integer box, thresholded at 0.5 and written into the image. It reads the box as the
reference's INCLUSIVE box (x2 - 1), while `targets` spreads the 28 cells over the exclusive box
[x1, x2): pasting the target of a ground truth back lands half a pixel up and left and slightly
shrunk (measured on the mini's first 100 eval canvases: mean mask IoU 0.73 with the ground
truth; SEGM AP 0.42 for otherwise perfect detections). Half a pixel is a small share of most
COCO objects (not measured here); on the mini's 1-2 px strokes it is most of the mask AP.
`paste_aligned` is the exact inverse of `targets` (pixel k's centre k + 0.5 sampled bilinearly
in the 28 x 28 cells, zero outside, as Detectron2's `paste_masks_in_image`); configs choose
with `eval.mask_paste` ("reference" for the MLPerf config).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from tpubench.detection import roi_align

MASK_THRESHOLD = 0.5  # mask_head/inference.py Masker(threshold=0.5, padding=1)


def crop_to_box(mask: np.ndarray, box: np.ndarray, size: int) -> np.ndarray:
    """Host: one instance's mask [H, W] and its exclusive pixel box -> [size, size] float32,
    sample (i, j) the mask's pixel under the centre of cell (i, j) of the box."""
    x1, y1, x2, y2 = (float(v) for v in box)
    centres = (np.arange(size) + 0.5) / size
    ys = np.clip(np.floor(y1 + centres * (y2 - y1)).astype(int), 0, mask.shape[0] - 1)
    xs = np.clip(np.floor(x1 + centres * (x2 - x1)).astype(int), 0, mask.shape[1] - 1)
    return mask[ys][:, xs].astype(np.float32)


def targets(gt_crops: jax.Array, gt_boxes: jax.Array, proposals: jax.Array,
            resolution: int = 28) -> jax.Array:
    """Device: binary targets [R, res, res] of proposals [R, 4] (exclusive ltrb) matched to
    ground truths with crops [R, S, S] over boxes [R, 4] (the matched rows)."""
    s = gt_crops.shape[-1]
    padded = jnp.pad(gt_crops.astype(jnp.float32), ((0, 0), (1, 1), (1, 1)))[..., None]
    gw = jnp.maximum(gt_boxes[:, 2] - gt_boxes[:, 0], 1e-6)
    gh = jnp.maximum(gt_boxes[:, 3] - gt_boxes[:, 1], 1e-6)
    # A point x of the image is at (x - g_x1) * S / g_w in crop cells; sample i sits at i + 0.5
    # (and the zero border shifts by 1), so the kernel's coordinate is that - 0.5 + 1.
    bx = (proposals[:, 0::2] - gt_boxes[:, 0:1]) * (s / gw)[:, None] + 0.5
    by = (proposals[:, 1::2] - gt_boxes[:, 1:2]) * (s / gh)[:, None] + 0.5
    crop_boxes = jnp.stack([bx[:, 0], by[:, 0], bx[:, 1], by[:, 1]], axis=-1)

    def one(crop, box):
        return roi_align.roi_align(crop, box[None], resolution, 1.0, 1)[0, ..., 0]

    return (jax.vmap(one)(padded, crop_boxes) >= MASK_THRESHOLD).astype(jnp.float32)


def _resize_bilinear(m: np.ndarray, h: int, w: int) -> np.ndarray:
    """torch F.interpolate(mode="bilinear", align_corners=False) of a 2-D array."""
    def axis(n_out, n_in):
        src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    y0, y1, fy = axis(h, m.shape[0])
    x0, x1, fx = axis(w, m.shape[1])
    top = m[y0][:, x0] * (1 - fx) + m[y0][:, x1] * fx
    bottom = m[y1][:, x0] * (1 - fx) + m[y1][:, x1] * fx
    return top * (1 - fy[:, None]) + bottom * fy[:, None]


def paste(mask: np.ndarray, box: np.ndarray, height: int, width: int,
          threshold: float = MASK_THRESHOLD) -> np.ndarray:
    """Host: probabilities [M, M] of one detection and its exclusive pixel box in the image ->
    the binary image mask [height, width] uint8 (the reference's expand + paste)."""
    m = mask.shape[0]
    scale = (m + 2.0) / m
    padded = np.pad(np.asarray(mask, np.float32), 1)
    x1, y1, x2, y2 = float(box[0]), float(box[1]), float(box[2]) - 1, float(box[3]) - 1
    cx, cy = (x1 + x2) * 0.5, (y1 + y2) * 0.5
    hw, hh = (x2 - x1) * 0.5 * scale, (y2 - y1) * 0.5 * scale
    bx = np.array([cx - hw, cy - hh, cx + hw, cy + hh]).astype(np.int64)  # .to(torch.int32)
    w, h = max(int(bx[2] - bx[0] + 1), 1), max(int(bx[3] - bx[1] + 1), 1)
    resized = _resize_bilinear(padded, h, w) > threshold
    out = np.zeros((height, width), np.uint8)
    xa, xb = max(bx[0], 0), min(bx[2] + 1, width)
    ya, yb = max(bx[1], 0), min(bx[3] + 1, height)
    if xb > xa and yb > ya:
        out[ya:yb, xa:xb] = resized[ya - bx[1]:yb - bx[1], xa - bx[0]:xb - bx[0]]
    return out


def paste_aligned(mask: np.ndarray, box: np.ndarray, height: int, width: int,
                  threshold: float = MASK_THRESHOLD) -> np.ndarray:
    """Host: as `paste`, but the inverse of `targets`: cell i of the M x M probabilities spans
    [x1 + i w / M, x1 + (i + 1) w / M) of the exclusive box; pixel k (centre k + 0.5) takes the
    bilinear value there, 0 beyond the cells' centres by more than one cell."""
    m = mask.shape[0]
    padded = np.pad(np.asarray(mask, np.float32), 1)
    x1, y1, x2, y2 = (float(v) for v in box)
    out = np.zeros((height, width), np.uint8)
    xa, xb = max(int(np.floor(x1)) - 1, 0), min(int(np.ceil(x2)) + 1, width)
    ya, yb = max(int(np.floor(y1)) - 1, 0), min(int(np.ceil(y2)) + 1, height)
    if xb <= xa or yb <= ya:
        return out

    def taps(lo, hi, a, b):  # padded-cell coordinates of pixel centres lo..hi-1
        v = (np.arange(lo, hi) + 0.5 - a) * m / max(b - a, 1e-6) - 0.5 + 1
        v = np.clip(v, 0.0, m + 1.0)
        i0 = np.minimum(np.floor(v).astype(int), m + 1)
        i1 = np.minimum(i0 + 1, m + 1)
        return i0, i1, v - i0

    y0, y1_, fy = taps(ya, yb, y1, y2)
    x0, x1_, fx = taps(xa, xb, x1, x2)
    top = padded[y0][:, x0] * (1 - fx) + padded[y0][:, x1_] * fx
    bottom = padded[y1_][:, x0] * (1 - fx) + padded[y1_][:, x1_] * fx
    values = top * (1 - fy[:, None]) + bottom * fy[:, None]
    out[ya:yb, xa:xb] = values > threshold
    return out


def encode_rle(mask: np.ndarray) -> dict:
    """pycocotools RLE of a binary [H, W] mask, counts as str (JSON- and loadRes-ready)."""
    from pycocotools import mask as mask_utils

    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    rle["counts"] = rle["counts"].decode("ascii")
    return rle
