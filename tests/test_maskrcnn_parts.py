"""Mask R-CNN's detection pieces against brute-force references: FPN anchors, the matcher, the
balanced sampler, the box coder, RoIAlign (a numpy loop of the reference's C++ kernel), mask
targets, mask pasting + RLE and pycocotools' box and mask AP. No model is compiled here."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpubench.detection import (
    boxes,
    coco_eval,
    fpn_anchors,
    masks,
    rcnn_targets,
    roi_align,
)
from tpubench.workload import Target


def test_cell_anchors_are_the_classic_faster_rcnn_anchors():
    """generate_anchors(stride 16, sizes 128/256/512, ratios 0.5/1/2) is the well-known table
    of py-faster-rcnn's generate_anchors.py docstring (inclusive boxes; + 1 here on x2, y2).
    Bites: the ratio read as w / h (the 0.5 row becomes tall), or no +1 on x2."""
    known = {128: [[-84, -40, 99, 55], [-56, -56, 71, 71], [-36, -80, 51, 95]],
             256: [[-176, -88, 191, 103], [-120, -120, 135, 135], [-80, -168, 95, 183]],
             512: [[-360, -184, 375, 199], [-248, -248, 263, 263], [-168, -344, 183, 359]]}
    for size, rows in known.items():
        want = np.asarray(rows, np.float64) + [0, 0, 1, 1]
        np.testing.assert_array_equal(fpn_anchors.cell_anchors(16, size, (0.5, 1.0, 2.0)), want)


def test_level_anchors_order_is_row_column_anchor_and_levels_follow_the_strides():
    """Anchor (y, x, a) of a level sits at index (y * W + x) * A + a, shifted by the stride.
    Bites: shifts built (x, y)-major (transposed grid)."""
    a = fpn_anchors.level_anchors((2, 3), 4, 8.0, (0.5, 1.0, 2.0))
    cell = fpn_anchors.cell_anchors(4, 8.0, (0.5, 1.0, 2.0))
    for y in range(2):
        for x in range(3):
            for k in range(3):
                np.testing.assert_allclose(a[(y * 3 + x) * 3 + k], cell[k] + [4 * x, 4 * y] * 2)
    levels = fpn_anchors.fpn_anchors((64, 64), (4, 8, 16, 32, 64), (8, 16, 32, 64, 128),
                                     (0.5, 1.0, 2.0))
    assert [len(x) for x in levels] == [768, 192, 48, 12, 3]


def test_roi_levels_follow_the_level_mapper():
    """floor(4 + log2(sqrt(area) / 224 + 1e-6)) clamped to [2, 5]: 224 px -> 4, 112 -> 3,
    111 -> 2, 448 -> 5, 1000 -> 5. Bites: log2 without the floor (round instead)."""
    sides = np.array([224.0, 112.0, 111.0, 448.0, 1000.0, 160.0])
    b = np.stack([np.zeros(6), np.zeros(6), sides, sides], -1)
    assert fpn_anchors.roi_levels(jnp.asarray(b)).tolist() == [4, 3, 2, 5, 5, 3]


def _reference_matcher(iou, high, low, allow_low):
    """matcher.py Matcher.__call__ in plain loops: iou [M, N]."""
    m, n = iou.shape
    matches = [int(np.argmax(iou[:, j])) for j in range(n)]
    vals = [iou[matches[j], j] for j in range(n)]
    out = []
    for j in range(n):
        if vals[j] < low:
            out.append(-1)
        elif vals[j] < high:
            out.append(-2)
        else:
            out.append(matches[j])
    if allow_low:
        for g in range(m):
            best = iou[g].max()
            for j in range(n):
                if iou[g, j] == best:
                    out[j] = matches[j]
    return np.asarray(out)


def _random_boxes(rng, n, size=64.0, lo=4.0, hi=30.0):
    xy = rng.uniform(0, size - hi, (n, 2))
    wh = rng.uniform(lo, hi, (n, 2))
    return np.concatenate([xy, xy + wh], -1).astype(np.float32)


@pytest.mark.parametrize("high,low,allow", [(0.7, 0.3, True), (0.5, 0.5, False)])
def test_matcher_equals_the_reference_loops_on_random_boxes(high, low, allow):
    """RPN (0.7, 0.3, low-quality kept) and box-head (0.5, 0.5) matching of random anchors to
    random ground truth (2 padding rows) equal the reference's rule written as loops, and the
    IoU is the reference's +1 IoU of the inclusive boxes. Bites: low-quality matches restored
    to the ground truth they are best for instead of their own argmax; `<= low` for
    background."""
    rng = np.random.default_rng(0)
    anchors = np.concatenate(fpn_anchors.fpn_anchors((64, 64), (4, 8, 16, 32, 64),
                                                     (8, 16, 32, 64, 128), (0.5, 1.0, 2.0)))
    gt = np.concatenate([_random_boxes(rng, 5), np.zeros((2, 4), np.float32)])
    valid = np.array([True] * 5 + [False] * 2)
    got, _ = rcnn_targets.match(jnp.asarray(gt), jnp.asarray(valid), jnp.asarray(anchors),
                                high, low, allow)
    iou = np.asarray(boxes.iou(gt[:5].astype(np.float64), anchors.astype(np.float64)))
    inc_a, inc_g = anchors - [0, 0, 1, 1], gt[:5] - [0, 0, 1, 1]
    lt = np.maximum(inc_g[:, None, :2], inc_a[None, :, :2])
    rb = np.minimum(inc_g[:, None, 2:], inc_a[None, :, 2:])
    inter = np.prod(np.clip(rb - lt + 1, 0, None), -1)
    area = lambda b: (b[:, 2] - b[:, 0] + 1) * (b[:, 3] - b[:, 1] + 1)  # noqa: E731
    np.testing.assert_allclose(iou, inter / (area(inc_g)[:, None] + area(inc_a)[None] - inter),
                               rtol=1e-6)
    want = _reference_matcher(np.asarray(boxes.iou(jnp.asarray(gt[:5]), jnp.asarray(anchors))),
                              high, low, allow)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert (want >= 0).sum() >= (5 if allow else 1) and (want == -1).sum() > 100


def test_sampler_takes_the_reference_counts_of_candidates_only():
    """256 with half positives: 20 positives -> all 20 + 236 negatives; 300 positives -> 128 +
    128; every sampled index is a candidate; different keys pick different subsets.
    Bites: num_neg = batch - batch * fraction (ignores a positive shortfall)."""
    n = 2000
    rng = np.random.default_rng(1)
    for n_pos, want_pos, want_neg in ((20, 20, 236), (300, 128, 128)):
        perm = rng.permutation(n)
        pos = np.zeros(n, bool)
        pos[perm[:n_pos]] = True
        neg = np.zeros(n, bool)
        neg[perm[n_pos:n_pos + 1000]] = True
        sp, sn = rcnn_targets.sample(jax.random.key(0), jnp.asarray(pos), jnp.asarray(neg),
                                     256, 0.5)
        sp, sn = np.asarray(sp), np.asarray(sn)
        assert sp.sum() == want_pos and sn.sum() == want_neg
        assert not (sp & ~pos).any() and not (sn & ~neg).any()
        sn2 = np.asarray(rcnn_targets.sample(jax.random.key(1), jnp.asarray(pos),
                                             jnp.asarray(neg), 256, 0.5)[1])
        assert (sn != sn2).any()
        idx, ok = rcnn_targets.sampled_indices(jnp.asarray(sp), jnp.asarray(sn), 256)
        assert set(np.asarray(idx)[:want_pos]) == set(np.nonzero(sp)[0]) and np.asarray(ok).all()


def test_box_coder_round_trips_and_matches_the_reference_formula():
    """encode then decode is the identity; one hand value with weights (10, 10, 5, 5):
    proposal [0, 0, 10, 20) (inclusive 0..9 x 0..19, centre 5, 10), gt [2, 4, 12, 14) ->
    (10 * 2 / 10, 10 * -1 / 20, 5 log(10 / 10), 5 log(10 / 20)). Bites: width without the
    reference's +1 (here: exclusive x2 - x1)."""
    p = jnp.array([[0.0, 0.0, 10.0, 20.0]])
    g = jnp.array([[2.0, 4.0, 12.0, 14.0]])
    t = rcnn_targets.encode(g, p, rcnn_targets.ROI_WEIGHTS)
    np.testing.assert_allclose(t[0], [2.0, -0.5, 0.0, 5 * math.log(0.5)], rtol=1e-6)
    np.testing.assert_allclose(rcnn_targets.decode(t, p, rcnn_targets.ROI_WEIGHTS), g, rtol=1e-5)


def _reference_roi_align(feat, box, out, scale, ratio):
    """ROIAlign_cpu.cpp (v0.7, not aligned) as loops: feat [H, W, C], box (x1, y1, x2, y2)."""
    h, w, c = feat.shape
    x1, y1, x2, y2 = (v * scale for v in box)
    rw, rh = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
    bw, bh = rw / out, rh / out
    res = np.zeros((out, out, c))
    for ph in range(out):
        for pw in range(out):
            acc = np.zeros(c)
            for iy in range(ratio):
                y = y1 + ph * bh + (iy + 0.5) * bh / ratio
                for ix in range(ratio):
                    x = x1 + pw * bw + (ix + 0.5) * bw / ratio
                    if y < -1.0 or y > h or x < -1.0 or x > w:
                        continue
                    yy, xx = max(y, 0.0), max(x, 0.0)
                    yl, xl = int(yy), int(xx)
                    if yl >= h - 1:
                        yh = yl = h - 1
                        yy = float(yl)
                    else:
                        yh = yl + 1
                    if xl >= w - 1:
                        xh = xl = w - 1
                        xx = float(xl)
                    else:
                        xh = xl + 1
                    ly, lx = yy - yl, xx - xl
                    acc += ((1 - ly) * (1 - lx) * feat[yl, xl] + (1 - ly) * lx * feat[yl, xh]
                            + ly * (1 - lx) * feat[yh, xl] + ly * lx * feat[yh, xh])
            res[ph, pw] = acc / (ratio * ratio)
    return res


def test_roi_align_equals_the_reference_kernel():
    """Random features, boxes inside, across the border, beyond it and tiny (size clamped to
    1), at scale 1/4, 7x7 with 2x2 samples: equal to the kernel's loops. Bites: the samples at
    bin * p + i / ratio (no +0.5), or no clamp at the last row."""
    rng = np.random.default_rng(2)
    feat = rng.normal(size=(9, 11, 3)).astype(np.float32)
    bx = np.array([[4.0, 4.0, 30.0, 20.0], [-10.0, 5.0, 20.0, 41.0], [30.0, 20.0, 60.0, 50.0],
                   [12.0, 12.0, 12.5, 13.0], [0.0, 0.0, 43.0, 35.0]], np.float32)
    got = np.asarray(jax.jit(lambda f, b: roi_align.roi_align(f, b, 7, 0.25, 2))(feat, bx))
    for i, b in enumerate(bx):
        np.testing.assert_allclose(got[i], _reference_roi_align(feat, b, 7, 0.25, 2),
                                   rtol=1e-5, atol=1e-5)


def test_fpn_pooler_picks_each_boxs_level():
    """A box of side 224 pools from level 4's map and one of side 60 from level 2's. Bites:
    the level one off (scales indexed from level 1)."""
    rng = np.random.default_rng(3)
    feats = [rng.normal(size=(64 // s, 64 // s, 2)).astype(np.float32) for s in (1, 2, 4, 8)]
    scales = (1.0, 0.5, 0.25, 0.125)
    bx = jnp.array([[0.0, 0.0, 224.0, 224.0], [2.0, 2.0, 62.0, 62.0]])
    out = roi_align.pool_fpn([jnp.asarray(f) for f in feats], bx, 3, scales, 2,
                             fpn_anchors.roi_levels(bx))
    incl = np.asarray(bx) - [0, 0, 1, 1]
    np.testing.assert_allclose(out[0], _reference_roi_align(feats[2], incl[0], 3, 0.25, 2),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[1], _reference_roi_align(feats[0], incl[1], 3, 1.0, 2),
                               rtol=1e-4, atol=1e-5)


def _four_corner_pool_fpn(features, bx, out, scales, ratio, levels):
    """The pooler as it was before issue 13's compile fix: one gather of the four corners of
    every sample ([4, R, ns, ns, C]), weighted and summed, then the mean of each bin's samples."""
    c = features[0].shape[-1]
    sizes = [f.shape[:2] for f in features]
    starts = np.cumsum([0] + [h * w for h, w in sizes])[:-1]
    flat = jnp.concatenate([f.reshape(-1, c) for f in features])
    i = levels - 2
    offset, hh, ww = (jnp.asarray(v)[i] for v in (starts, [h for h, _ in sizes],
                                                   [w for _, w in sizes]))
    b = jnp.concatenate([bx[:, :2], bx[:, 2:] - 1.0], -1) * jnp.asarray(scales)[i][:, None]
    size_w, size_h = jnp.maximum(b[:, 2] - b[:, 0], 1.0), jnp.maximum(b[:, 3] - b[:, 1], 1.0)
    offs = (jnp.arange(out)[:, None] + (jnp.arange(ratio)[None, :] + 0.5) / ratio).reshape(-1)
    ys = b[:, 1, None] + offs[None] * (size_h / out)[:, None]
    xs = b[:, 0, None] + offs[None] * (size_w / out)[:, None]

    def taps(v, size):
        size = size.astype(jnp.float32)[:, None]
        outside = (v < -1.0) | (v > size)
        v = jnp.maximum(v, 0.0)
        lo = jnp.floor(v)
        last = lo >= size - 1
        lo = jnp.where(last, size - 1, lo)
        hi = jnp.where(last, size - 1, lo + 1)
        return outside, lo.astype(jnp.int32), hi.astype(jnp.int32), jnp.where(last, 0.0, v - lo)

    oy, y0, y1, ly = taps(ys, hh)
    ox, x0, x1, lx = taps(xs, ww)
    rows = jnp.stack([y0, y0, y1, y1], 0)[:, :, :, None]
    cols = jnp.stack([x0, x1, x0, x1], 0)[:, :, None, :]
    index = offset[None, :, None, None] + rows * ww[None, :, None, None] + cols
    wy = jnp.stack([1 - ly, 1 - ly, ly, ly], 0)[:, :, :, None]
    wx = jnp.stack([1 - lx, lx, 1 - lx, lx], 0)[:, :, None, :]
    weight = wy * wx * ~(oy[:, :, None] | ox[:, None, :])[None]
    v = jnp.sum(flat[index] * weight[..., None], axis=0)
    r = v.shape[0]
    return v.reshape(r, out, ratio, out, ratio, c).mean(axis=(2, 4))


def test_separable_pooler_equals_the_four_corner_gather_values_and_gradients():
    """The separable RoIAlign (one [2ns, 2ns] gather, two interpolation matrices) against the
    four-corner formulation it replaced, on four FPN levels, 40 random boxes (inside, across
    the border, beyond it, tiny), 7x7 and 14x14 with 2x2 samples: outputs and the gradient of a
    random projection w.r.t. every level's map agree to float32 rounding. Bites (tried): the
    bin matrix not divided by s (max diff 6.05), the taps' lo/hi order swapped in the gather
    index (2.80)."""
    rng = np.random.default_rng(5)
    feats = [jnp.asarray(rng.normal(size=(64 // s, 48 // s, 3)).astype(np.float32))
             for s in (4, 8, 16, 32)]
    scales = (0.25, 0.125, 0.0625, 0.03125)
    xy = rng.uniform(-20, 60, (40, 2))
    bx = jnp.asarray(np.concatenate([xy, xy + rng.uniform(0.3, 120, (40, 2))], 1), jnp.float32)
    levels = fpn_anchors.roi_levels(bx, canonical_scale=56.0)
    assert len(set(np.asarray(levels).tolist())) == 4  # every level is read
    for out in (7, 14):
        proj = jnp.asarray(rng.normal(size=(40, out, out, 3)).astype(np.float32))

        def loss(fs, pool, out=out, proj=proj):
            return jnp.sum(pool(fs, bx, out, scales, 2, levels) * proj)

        new = roi_align.pool_fpn(feats, bx, out, scales, 2, levels)
        old = _four_corner_pool_fpn(feats, bx, out, scales, 2, levels)
        np.testing.assert_allclose(new, old, rtol=1e-5, atol=1e-5)
        g_new = jax.jit(jax.grad(functools.partial(loss, pool=roi_align.pool_fpn)))(feats)
        g_old = jax.jit(jax.grad(functools.partial(loss, pool=_four_corner_pool_fpn)))(feats)
        for a, b in zip(g_new, g_old, strict=True):
            assert float(jnp.abs(b).max()) > 0.1
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_mask_targets_are_the_ground_truth_rasterised_on_the_proposal():
    """A blob mask, cut to its box at 32 x 32, then RoIAligned onto proposals (the box itself,
    a shifted and a wider box): >= 97% of the 28 x 28 cells equal the brute-force answer (is
    the image pixel under the cell's centre in the mask?), and cells outside the ground
    truth's box are 0. Bites: the half-cell shift dropped (a one-cell offset: agreement 80%),
    proposal coordinates not taken relative to the ground truth's box."""
    yy, xx = np.mgrid[0:64, 0:64]
    blob = (((yy - 30) / 12.0) ** 2 + ((xx - 25) / 8.0) ** 2 <= 1.0) | (
        (yy > 20) & (yy < 26) & (xx > 25) & (xx < 36))
    rows, cols = np.nonzero(blob)
    gt = np.array([cols.min(), rows.min(), cols.max() + 1, rows.max() + 1], np.float32)
    crop = masks.crop_to_box(blob, gt, 32)
    props = np.array([gt, gt + [3, -2, 3, -2], [gt[0] - 6, gt[1], gt[2] + 10, gt[3] + 4]],
                     np.float32)
    got = np.asarray(masks.targets(jnp.asarray(np.stack([crop] * 3)), jnp.asarray(
        np.stack([gt] * 3)), jnp.asarray(props)))
    for p, t in zip(props, got, strict=True):
        cy = p[1] + (np.arange(28) + 0.5) * (p[3] - p[1]) / 28
        cx = p[0] + (np.arange(28) + 0.5) * (p[2] - p[0]) / 28
        iy, ix = np.floor(cy).astype(int), np.floor(cx).astype(int)
        inside = (iy[:, None] >= 0) & (iy[:, None] < 64) & (ix[None] >= 0) & (ix[None] < 64)
        want = np.where(inside, blob[np.clip(iy, 0, 63)][:, np.clip(ix, 0, 63)], False)
        assert (t == want).mean() >= 0.97, (t == want).mean()
        outside = ((cy[:, None] < gt[1] - 1) | (cy[:, None] > gt[3] + 1)
                   | (cx[None] < gt[0] - 1) | (cx[None] > gt[2] + 1))
        assert not t[outside].any()


def test_paste_rle_and_coco_box_and_mask_ap():
    """Ground-truth masks pasted back from their own 28 x 28 crops score mask AP >= 0.75 (0.834
    measured: the reference's 28 x 28 round trip keeps mask IoU at 0.87-0.92 on these 10-30 px
    ellipses) and box AP 1.0 by pycocotools; the same boxes with every mask moved 12 px right
    keep box AP 1.0 and lose the mask AP (segm and bbox results kept apart). Bites: one loadRes
    with both fields (boxes replaced by the masks' extents: box AP drops too)."""
    rng = np.random.default_rng(4)
    n, m, s = 6, 3, 64
    gt_boxes = np.zeros((n, m, 4), np.float32)
    gt_labels = np.zeros((n, m), np.int64)
    full = np.zeros((n, m, s, s), np.uint8)
    yy, xx = np.mgrid[0:s, 0:s]
    for i in range(n):
        for j in range(m):
            x0, y0 = rng.integers(2, 30, 2)
            w, h = rng.integers(10, 30, 2)
            e = (((yy - y0 - h / 2) / (h / 2)) ** 2 + ((xx - x0 - w / 2) / (w / 2)) ** 2) <= 1
            full[i, j] = e
            r, c = np.nonzero(e)
            gt_boxes[i, j] = [c.min(), r.min(), c.max() + 1, r.max() + 1]
            gt_labels[i, j] = rng.integers(1, 4)
    sizes = np.full((n, 2), s, np.float32)
    gt_rles = [{j: masks.encode_rle(full[i, j]) for j in range(m)} for i in range(n)]
    probs = [[masks.crop_to_box(full[i, j], gt_boxes[i, j], 28) for j in range(m)]
             for i in range(n)]

    def score(shift):
        det_rles = [{j: masks.encode_rle(np.roll(masks.paste(probs[i][j], gt_boxes[i, j], s, s),
                                                 shift, axis=1)) for j in range(m)}
                    for i in range(n)]
        return coco_eval.coco_box_mask_stats(
            sizes, gt_boxes / s, gt_labels, gt_rles, gt_boxes / s, np.ones((n, m)), gt_labels,
            det_rles, num_classes=4, gt_area=full.sum((2, 3)).astype(np.float32))

    bbox, segm = score(0)
    assert bbox[0] == pytest.approx(1.0) and segm[0] >= 0.75, (bbox[0], segm[0])
    bbox2, segm2 = score(12)
    assert bbox2[0] == pytest.approx(1.0) and segm2[0] < 0.3


def test_aligned_paste_inverts_the_mask_crop_on_thin_strokes():
    """A glyph-like 2 px stroke mask (ring + diagonal, 19 x 24 px box) cut to its box at 28 x 28
    cells (`crop_to_box`, the cell convention `masks.targets` also uses, test above) and pasted
    back: `paste_aligned` gives mask IoU >= 0.97 with the original (0.992 measured) and the
    centroid within 0.1 px; the reference's `paste` lands 0.3-0.9 px up-left (IoU 0.630
    measured), the bug that held the mini's SEGM at 0.42 for perfect detections. Bites: pixel
    centres at k instead of k + 0.5 in `paste_aligned` (IoU 0.6), the box read as inclusive."""
    yy, xx = np.mgrid[0:64, 0:64]
    stroke = (np.abs(np.hypot(yy - 30, (xx - 26) * 1.4) - 8) < 1.0) | (
        (np.abs((yy - 20) - 1.5 * (xx - 22)) < 1.6) & (yy >= 20) & (yy < 44))
    rows, cols = np.nonzero(stroke)
    gt = np.array([cols.min(), rows.min(), cols.max() + 1, rows.max() + 1], np.float32)
    cells = masks.crop_to_box(stroke, gt, 28)

    def iou_and_shift(paste):
        p = paste(cells, gt, 64, 64).astype(bool)
        r, c = np.nonzero(p)
        iou = (p & stroke).sum() / (p | stroke).sum()
        return iou, c.mean() - cols.mean(), r.mean() - rows.mean()

    iou, dx, dy = iou_and_shift(masks.paste_aligned)
    assert iou >= 0.97 and abs(dx) < 0.1 and abs(dy) < 0.1, (iou, dx, dy)
    iou, dx, dy = iou_and_shift(masks.paste)
    assert iou < 0.7 and dx < -0.25 and dy < -0.5, (iou, dx, dy)


def test_two_metric_target_needs_both():
    """{"BBOX": 0.377, "SEGM": 0.339}: both above -> reached; either below or missing -> not;
    the primary value is BBOX. Bites: `any` instead of `all`."""
    t = Target("box AP / mask AP", 0.377, True, (("BBOX", 0.377), ("SEGM", 0.339)))
    assert t.reached({"BBOX": 0.38, "SEGM": 0.34})
    assert not t.reached({"BBOX": 0.38, "SEGM": 0.33})
    assert not t.reached({"BBOX": 0.37, "SEGM": 0.40})
    assert not t.reached({"BBOX": 0.38})
    assert t.primary({"BBOX": 0.25, "SEGM": 0.5}) == 0.25
    assert Target("mAP", 0.23).reached(0.25) and Target("mAP", 0.23).primary(0.1) == 0.1
