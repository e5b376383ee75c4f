"""DeepLab's ADE20K reader (workloads/deeplab/ade20k.py): the reference's 150 -> 32 mapping and
512x512 resize/pad on hand cases, the reader on a made ADEChallengeData2016 folder (tfds'
scene_parse150 holds instance masks, not these labels: see the module), a missing dataset as a
UsageError, and `tpubench infer deeplab --config=full` serving the made images."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.infer.spec import inference_spec
from workloads.deeplab import ade20k


def test_labels_0_and_32_to_150_become_the_ignore_label_and_1_to_31_stay():
    """input_preprocess.py: label >= 32 -> 0. Bites: 150 -> 151 classes kept, an off-by-one
    (31 dropped or 32 kept)."""
    label = np.array([[0, 1, 2, 31], [32, 33, 150, 17]], np.uint8)
    np.testing.assert_array_equal(ade20k.map_labels(label),
                                  [[0, 1, 2, 31], [0, 0, 0, 17]])
    assert ade20k.map_labels(label).dtype == np.int32


@pytest.mark.parametrize("hw, expected", [
    ((300, 400), (384, 512)),   # shorter side to 512 overshoots: longer side to 512
    ((512, 683), (383, 512)),   # floor(512 * 512 / 683) = 383
    ((600, 200), (512, 170)),   # portrait
    ((256, 256), (512, 512)),   # upscaled
    ((512, 512), (512, 512)),
])
def test_resize_to_range_sizes(hw, expected):
    """Bites: the shorter side to 512 without the max-size rule (a 683-wide image), rounding
    instead of flooring (383.8 -> 384)."""
    assert ade20k.resized_size(*hw) == expected


def test_preprocess_resizes_with_aligned_corners_pads_and_maps_labels():
    """A 2x4 image and label -> 256x512 content, padded to 512x512 (image 127, label 0).
    Bites: half-pixel resizing (corners would not be the input's corners), padding on top,
    nearest labels interpolated, unmapped labels."""
    image = np.array([[[0, 10, 20], [40, 50, 60], [80, 90, 100], [120, 130, 140]],
                      [[200, 210, 220], [160, 170, 180], [30, 30, 30], [250, 240, 230]]],
                     np.uint8)
    label = np.array([[1, 40, 31, 0], [5, 5, 5, 5]], np.uint8)
    img, lab = ade20k.preprocess(image, label)
    assert img.shape == (512, 512, 3) and img.dtype == np.uint8
    assert lab.shape == (512, 512) and lab.dtype == np.int32
    np.testing.assert_array_equal(img[0, 0], image[0, 0])  # align_corners: corners exact
    np.testing.assert_array_equal(img[255, 511], image[1, 3])
    np.testing.assert_array_equal(img[0, 511], image[0, 3])
    # column 100 samples x = 100 * 3 / 511 = 0.587: 0.587 * 40 = 23.5, truncated to 23 (TF1
    # without aligned corners samples 100 * 4 / 512 = 0.781: 31)
    assert img[0, 100, 0] == 23
    assert (img[256:] == 127).all() and (lab[256:] == 0).all()  # padding, bottom only
    assert lab[0, 0] == 1 and lab[0, 511] == 0 and lab[255, 0] == 5
    assert set(np.unique(lab[:128])) == {0, 1, 31}  # 40 -> 0: ignored
    assert (lab[128:256] == 5).all()


def _made_ade20k(root, sizes):
    """ADEChallengeData2016/{images,annotations}/validation with one flat-colour JPEG and a
    label PNG per size: the label is class (i + 1) * 15 on the left half, 3 on the right."""
    img_dir = root / ade20k.ROOT / "images" / "validation"
    lab_dir = root / ade20k.ROOT / "annotations" / "validation"
    img_dir.mkdir(parents=True)
    lab_dir.mkdir(parents=True)
    for i, (h, w) in enumerate(sizes):
        name = f"ADE_val_{i + 1:08d}"
        Image.fromarray(np.full((h, w, 3), 40 * (i + 1), np.uint8)).save(
            img_dir / f"{name}.jpg", quality=100)
        label = np.full((h, w), 3, np.uint8)
        label[:, : w // 2] = (i + 1) * 15
        Image.fromarray(label).save(lab_dir / f"{name}.png")


def _full(tmp_path, **overrides):
    return config_lib.load("deeplab", "full", {"data.dir": str(tmp_path), **overrides})


def test_reader_gives_512_uint8_batches_in_file_order_with_mapped_labels(tmp_path):
    """3 made images in batches of 2: shapes, dtypes, the mask of the padding row, file order
    and the mapping (classes 15 and 30 kept, 45 ignored). Bites: unsorted files, float
    pixels, labels not mapped, the padding row unmasked."""
    _made_ade20k(tmp_path, [(64, 96), (80, 40), (50, 50)])
    cfg = _full(tmp_path, **{"eval.samples": 3, "eval.batch_size": 2})
    workload = registry.create(cfg)
    workload.check_data()
    batches = list(workload.eval_batches(0, 1))
    assert len(batches) == 2
    b0, b1 = batches
    assert b0["inputs"].shape == (2, 512, 512, 3) and b0["inputs"].dtype == np.uint8
    assert b0["label"].shape == (2, 512, 512) and b0["label"].dtype == np.int32
    np.testing.assert_array_equal(b1["mask"], [1.0, 0.0])
    assert abs(int(b0["inputs"][0, 10, 10, 0]) - 40) <= 2  # image 1's colour (JPEG)
    assert abs(int(b1["inputs"][0, 10, 10, 0]) - 120) <= 2  # image 3
    assert set(np.unique(b0["label"][0])) == {0, 3, 15}  # 64x96 -> 341x512, padded with 0
    assert (b0["label"][0, 341:] == 0).all() and (b0["label"][0, :341, -1] == 3).all()
    assert set(np.unique(b0["label"][1])) == {0, 3, 30}  # 80x40 -> 512x256
    assert (b0["label"][1, :, 256:] == 0).all()
    assert set(np.unique(b1["label"][0])) == {0, 3}  # 45 -> 0; square: no padding
    assert (b1["label"][0, :, -1] == 3).all()
    assert workload.batch_spec(2, train=False)["inputs"].dtype == np.uint8


def test_missing_dataset_is_a_usage_error_naming_the_download(tmp_path):
    """Bites: a bare FileNotFoundError (or a silent empty eval) when the folder is missing."""
    workload = registry.create(_full(tmp_path))
    with pytest.raises(UsageError, match="ADEChallengeData2016.zip"):
        workload.check_data()
    with pytest.raises(UsageError, match="ADEChallengeData2016"):
        inference_spec(workload)


def test_full_config_serves_the_made_ade20k_under_loadgen(tmp_path):
    """`tpubench infer deeplab --config=full` on 2 made images (random weights, accuracy mode):
    every sample served, 512x512 uint8 responses, an mIoU in [0, 1]. The full model's width
    is cut to 0.35 to keep the compile short (the reader and the serving path are the full
    config's). Bites: the synthetic-only refusal left in, the reader's uint8 pixels not
    reaching the model."""
    from tpubench.infer import cli

    _made_ade20k(tmp_path / "data", [(64, 96), (80, 40)])
    rc = cli.main(["deeplab", "--config=full", "--scenario=SingleStream", "--mode=accuracy",
                   "--batch-sizes=1", f"--workdir={tmp_path / 'out'}",
                   f"--config.data.dir={tmp_path / 'data'}", "--config.eval.samples=2",
                   "--config.model.width=0.35", "--config.model.aspp_filters=16",
                   "--config.model.decoder_filters=16", "--config.model.projection_filters=8"])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert rc == 0 and summary["accuracy_samples"] == 2
    assert 0.0 <= summary["accuracy"] <= 1.0
