"""Mask R-CNN's COCO input (workloads/maskrcnn/coco.py): tfds `coco/2017` under
`tfds.testing.mock_data` with an instances JSON written for the mock examples (each object's
mask the lower-left triangle of its box), through the workload's train and eval readers."""

from __future__ import annotations

import json
from unittest import mock

import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.datasets import coco as tfds_coco
from tpubench.detection import masks
from tpubench.errors import UsageError
from tpubench.evaluation import EvalResults
from workloads.maskrcnn import coco

SMALL = {"data.image_size": 64, "data.min_image_size": 40, "data.max_image_size": 64,
         "data.max_boxes": 8, "data.gt_mask_size": 16, "data.global_batch_size": 2,
         "eval.batch_size": 3, "eval.mask_paste": "aligned"}


def _triangle(box_xywh):
    """The polygon (x1, y1), (x1, y2), (x2, y2): below the box's main diagonal."""
    x, y, w, h = box_xywh
    return [[x, y, x, y + h, x + w, y + h]]


def _instances(examples) -> dict:
    """COCO's instances JSON for tfds examples: their image ids and sizes, every object with its
    tfds annotation id, box and triangle polygon (crowd flags kept)."""
    images, anns = [], []
    for ex in examples:
        h, w = ex["image"].shape[:2]
        images.append({"id": int(ex["image/id"]), "height": h, "width": w})
        o = ex["objects"]
        for k in range(min(len(o[f]) for f in ("bbox", "label", "is_crowd", "area", "id"))):
            y1, x1, y2, x2 = (float(v) for v in o["bbox"][k])
            box = [x1 * w, y1 * h, (x2 - x1) * w, (y2 - y1) * h]
            anns.append({"id": int(o["id"][k]), "image_id": int(ex["image/id"]),
                         "category_id": int(o["label"][k]) + 1, "bbox": box,
                         "segmentation": _triangle(box), "area": box[2] * box[3] / 2,
                         "iscrowd": int(o["is_crowd"][k])})
    cats = [{"id": i, "name": str(i)} for i in range(1, 81)]
    return {"images": images, "annotations": anns, "categories": cats}


@pytest.fixture(scope="module")
def mock_coco(tmp_path_factory):
    """(workload, raw validation examples, train batch, eval batch) on 6 mock examples."""
    import tensorflow_datasets as tfds

    d = tmp_path_factory.mktemp("coco_annotations")
    cfg = config_lib.load("maskrcnn", "full", {**SMALL, "data.annotations_dir": str(d)})
    w = registry.create(cfg)
    with tfds.testing.mock_data(num_examples=6), mock.patch.object(
            tfds.core.DatasetBuilder, "is_prepared", return_value=True):
        for split, name in coco.ANNOTATION_FILES.items():
            raw = list(tfds.as_numpy(tfds_coco.builder(cfg).as_dataset(split=split)))
            (d / name).write_text(json.dumps(_instances(raw)))
        w.check_data()
        train = next(w.train_batches(0, 0, 1))
        ev = next(coco.eval_batches(cfg, 0, 1))
    return w, raw, train, ev


def test_resize_follows_the_references_get_size():
    """transforms.py Resize(800, 1333).get_size. Bites: the long side not capped at 1333, or
    the (h, w) order swapped for portrait images."""
    assert coco.resized_hw(480, 640, 800, 1333) == (800, 1066)
    assert coco.resized_hw(640, 480, 800, 1333) == (1066, 800)
    assert coco.resized_hw(100, 1000, 800, 1333) == (133, 1330)
    assert coco.resized_hw(800, 1200, 800, 1333) == (800, 1200)


def test_batches_have_the_workloads_shapes_and_masks_follow_their_boxes(mock_coco):
    """Train and eval batches match batch_spec; every real object's mask crop is its
    lower-left triangle (crop[i, j] = 1 below the diagonal, 0 above) as seen by the box it was
    cut with, in the eval batch and in flipped rows (mirrored: 1 below the anti-diagonal).
    Bites: the crop cut with the resized image's box from the original mask, the tfds (y, x)
    box order kept, the mask not flipped with the image."""
    w, raw, train, ev = mock_coco
    for batch, is_train, n in ((train, True, 2), (ev, False, 3)):
        spec = w.batch_spec(n, train=is_train)
        assert set(batch) == set(spec)
        for k, s in spec.items():
            assert batch[k].shape == s.shape and batch[k].dtype == s.dtype, k
    coco_val = coco._coco(coco.annotation_path(w.config, "validation"))
    flipped = [coco.example_arrays(ex, coco_val, w.config, train=True, flip=True)
               for ex in raw[:3]]
    g = SMALL["data.gt_mask_size"]
    i, j = np.mgrid[:g, :g]
    checked = 0
    for rows, flip in ((ev, False), (coco._stack(flipped), True)):
        for r, k in zip(*np.nonzero(rows["labels"] > 0), strict=True):
            crop = rows["mask_crops"][r, k]
            # the box in ORIGINAL pixels (raw[r]: the eval rows and flipped rows are raw[:3])
            h0, w0 = raw[r]["image"].shape[:2]
            side = np.min((rows["boxes"][r, k, 2:] - rows["boxes"][r, k, :2])
                          / rows["image_hw"][r, ::-1] * [w0, h0])
            if side < 8:
                continue  # a few pixels: the rasterised diagonal is most of the crop
            margin = int(np.ceil(g / side)) + 1  # one mask pixel spans g / side cells
            jj = g - 1 - j if flip else j
            # away from the box's edges too: a fractional box edge leaves its pixel out or in
            inner = (np.minimum(i, j) >= margin) & (np.maximum(i, j) < g - margin)
            assert crop[inner & (i > jj + margin)].min() == 1, (flip, r, k, crop)
            assert crop[inner & (jj > i + margin)].max() == 0, (flip, r, k, crop)
            checked += 1
    assert checked >= 2, "too few objects large enough to check"


def test_eval_batch_keeps_the_original_image_and_scores_its_ground_truth_at_one(mock_coco):
    """The first eval rows: `size` the original (h, w), `image_hw` the resized one, the boxes
    the raw example's scaled to it, gt masks at the original size (pixel count = annToMask's);
    eval_finalize given the ground truth as detections (28 x 28 crops of the masks) scores
    BBOX 1 and SEGM 0.833 (measured: the mock's random boxes include objects of a few pixels,
    where the 28 x 28 round trip loses pixels). Bites: gt masks RLE-encoded over the whole
    padded bucket (SEGM 0.0, seen), boxes not scaled by the resize."""
    w, raw, _, ev = mock_coco
    h, wd = raw[0]["image"].shape[:2]
    np.testing.assert_array_equal(ev["size"][0], [h, wd])
    oh, ow = coco.resized_hw(h, wd, SMALL["data.min_image_size"], SMALL["data.max_image_size"])
    np.testing.assert_array_equal(ev["image_hw"][0], [oh, ow])
    real = ev["labels"] > 0
    o = raw[0]["objects"]
    b = o["bbox"][:, [1, 0, 3, 2]]  # mock boxes come in any order: inverted ones are dropped
    b = b[((b[:, 2] - b[:, 0]) > 1e-4) & ((b[:, 3] - b[:, 1]) > 1e-4)]
    assert len(b) == real[0].sum() > 0
    np.testing.assert_allclose(ev["boxes"][0, : len(b)], b * [ow, oh, ow, oh], rtol=1e-5)
    assert ev["gt_masks"][0, :, h:].max() == 0 and ev["gt_masks"][0, :, :, wd:].max() == 0
    cells = np.zeros(ev["labels"].shape + (28, 28), np.float16)
    orig = ev["boxes"] / np.concatenate([ev["image_hw"][:, ::-1]] * 2, -1)[:, None]
    for r, k in zip(*np.nonzero(real), strict=True):
        hh, ww = ev["size"][r]
        cells[r, k] = masks.crop_to_box(ev["gt_masks"][r, k], orig[r, k] * [ww, hh, ww, hh], 28)
    p = {"det_boxes": orig, "det_scores": np.where(real, 0.9, 0.0), "det_labels": ev["labels"],
         "det_masks": cells, "gt_boxes": orig, "gt_labels": ev["labels"],
         "gt_crowd": ev["crowd"], "gt_area": ev["area"], "gt_masks": ev["gt_masks"],
         "size": ev["size"]}
    got = w.eval_finalize(EvalResults({}, p, float(len(real))))
    assert got["BBOX"] == pytest.approx(1.0) and got["SEGM"] >= 0.8, got


def test_missing_annotations_are_a_usage_error_naming_the_file(tmp_path):
    """Bites: check_data not looking for the instances files (a KeyError mid-run)."""
    import tensorflow_datasets as tfds

    cfg = config_lib.load("maskrcnn", "full", {"data.annotations_dir": str(tmp_path)})
    with tfds.testing.mock_data(num_examples=1), mock.patch.object(
            tfds.core.DatasetBuilder, "is_prepared", return_value=True), pytest.raises(
            UsageError, match="instances_train2017.json.*annotations_dir"):
        registry.create(cfg).check_data()


@pytest.mark.parametrize("key,value", [("model.backbone_checkpoint", "/data/r50.npz"),
                                       ("data.annotations_dir", "/data/coco/annotations")])
def test_where_the_reference_inputs_live_keeps_the_full_config_closed(key, value):
    """The full config must name the pretrained backbone file and the annotations directory,
    both the reference's inputs: pointing at them keeps closed division. Bites: the
    maskrcnn table without `model.backbone_checkpoint` (as before: the full config turned open)."""
    cfg = config_lib.load("maskrcnn", "full", {key: value})
    assert cfg.submission.division == "closed", list(cfg.submission.open_reasons)
    assert list(cfg.submission.open_reasons) == []


def test_a_resumed_train_stream_gives_the_batches_the_first_run_would_have(mock_coco):
    """`train_batches(start_step=2)` is the uninterrupted stream's third batch, images, boxes,
    masks and flips alike (a preempted run resumes on the same data). Bites: skipping
    `start_step` examples instead of `start_step` batches of them (tried: other images)."""
    import itertools

    import tensorflow_datasets as tfds

    w = mock_coco[0]
    with tfds.testing.mock_data(num_examples=6), mock.patch.object(
            tfds.core.DatasetBuilder, "is_prepared", return_value=True):
        third = list(itertools.islice(w.train_batches(0, 0, 1), 3))[2]
        resumed = next(w.train_batches(2, 0, 1))
    assert sorted(resumed) == sorted(third)
    for k in third:
        np.testing.assert_array_equal(resumed[k], third[k], err_msg=k)


def test_each_epoch_visits_every_image_once_in_a_new_order_and_both_readers_use_it(tmp_path):
    """MLPerf Training Rules v0.7, Training Data Order; the references reshuffle per epoch (SSD
    train.py's RandomSampler, maskrcnn_benchmark's DistributedSampler.set_epoch): three epochs of
    the train stream over 6 mock images, each a permutation of the images with boxes, not all in
    one order. Both workloads' readers read it. Bites: `repeat().shuffle(n)` (SSD's old stream:
    epochs mixed at the boundaries, an image twice in one epoch's span) and Mask R-CNN's old one
    (no example shuffle: one order every epoch)."""
    import tensorflow_datasets as tfds

    from workloads.ssd import coco as ssd_coco

    cfg = config_lib.load("maskrcnn", "full", {**SMALL, "data.annotations_dir": str(tmp_path)})
    with tfds.testing.mock_data(num_examples=6), mock.patch.object(
            tfds.core.DatasetBuilder, "is_prepared", return_value=True):
        raw = list(tfds.as_numpy(tfds_coco.builder(cfg).as_dataset(split="train")))
        ids = sorted(int(ex["image/id"]) for ex in raw if len(ex["objects"]["label"]))
        stream = tfds.as_numpy(tfds_coco.train_stream(cfg, "train", 4).take(3 * len(ids)))
        got = [int(ex["image/id"]) for ex in stream]
        epochs = [got[i * len(ids):(i + 1) * len(ids)] for i in range(3)]
        assert len(ids) >= 3 and all(sorted(e) == ids for e in epochs), (ids, epochs)
        assert len({tuple(e) for e in epochs}) > 1, epochs
        ssd_cfg = config_lib.load("ssd", "smoke", {"data.source": "tfds",
                                                   "data.dataset": "coco/2017"})
        (tmp_path / coco.ANNOTATION_FILES["train"]).write_text(json.dumps(_instances(raw)))
        with mock.patch.object(tfds_coco, "train_stream", wraps=tfds_coco.train_stream) as spy:
            next(coco.train_batches(cfg, 0, 0, 1))
            next(ssd_coco.train_batches(ssd_cfg, 0, 0, 1))
        assert spy.call_count == 2
