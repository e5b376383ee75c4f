"""BraTS 2019 as the MLPerf Inference v0.7 3d-unet reference preprocesses it, read from a
user-given directory (nothing here downloads or preprocesses it).

The reference (mlcommons/inference v0.7/medical_imaging/3d-unet): `Task043_BraTS_2019.py`
converts the labels to nnU-Net's 0/1/2/3 (background, edema, non-enhancing, enhancing) into
`labelsTr/<case>.nii.gz`; `preprocess.py` runs nnU-Net's preprocessing (crop to the nonzero
box, z-score per modality) of the fold-1 validation cases and pickles `[data, properties]` per
case as `<case>.pkl`, with the case list in `preprocessed_files.pkl`; `data` is
[4, 224, 224, 160] float32 (the case, zero-padded to that size, centred, as accuracy-brats.py
undoes with pad_before = (224 - size) // 2) or the unpadded crop (padded here the same way);
`properties["size_after_cropping"]` and `["crop_bbox"]` place it.

Here: `config.data.dir` = that preprocessed directory, `config.data.label_dir` = labelsTr. A
sample is the padded volume as [224, 224, 160, 4] (channels last); its label the crop of the
case's labels (read with nibabel, put in SimpleITK's (z, y, x) order, which nnU-Net's arrays
use, cut to `crop_bbox`), padded with `dice.IGNORE`, so that Dice counts only the case's voxels,
which is what the accuracy script's un-padding does. (The script then pastes the prediction back
into the full 240x240x155 grid and compares it there; outside the crop box both prediction and
truth are background, so region Dice is the same.) The .pkl files are pickles: read only
directories you trust.
"""

from __future__ import annotations

import functools
import os
import pathlib
import pickle
from collections.abc import Iterator

import numpy as np

from tpubench.errors import UsageError
from workloads.unet3d.dice import IGNORE

PADDED_SHAPE = (224, 224, 160)
CASE_LIST = "preprocessed_files.pkl"
HOW = ("Preprocess the BraTS 2019 training set with the v0.7 reference "
       "(mlcommons/inference v0.7/medical_imaging/3d-unet: `make preprocess_data`, i.e. "
       "Task043_BraTS_2019.py then preprocess.py) and pass --config.data.dir=<its "
       "build/preprocessed_data> and --config.data.label_dir=<build/raw_data/nnUNet_raw_data/"
       "Task043_BraTS2019/labelsTr>.")


def check(config) -> None:
    """`UsageError` with the reference's commands unless both directories and the case list
    are there, and every listed case has its .pkl and its label file (paths only)."""
    d, labels = pathlib.Path(config.data.dir or ""), pathlib.Path(config.data.label_dir or "")
    if not config.data.dir or not (d / CASE_LIST).is_file():
        raise UsageError(f"unet3d: no {CASE_LIST} in --config.data.dir={str(config.data.dir)!r}"
                         f". {HOW}")
    if not config.data.label_dir or not labels.is_dir():
        raise UsageError(f"unet3d: --config.data.label_dir={str(config.data.label_dir)!r} is "
                         f"not a directory. {HOW}")
    names = case_names(str(d))
    missing = [n for n in names if not (d / f"{n}.pkl").is_file()
               or not (labels / f"{n}.nii.gz").is_file()]
    if missing:
        raise UsageError(f"unet3d: {len(missing)} of the {len(names)} cases of {CASE_LIST} "
                         f"lack their .pkl or labelsTr .nii.gz (first: {missing[0]}). {HOW}")


@functools.lru_cache(maxsize=4)
def case_names(data_dir: str) -> tuple[str, ...]:
    """The case list of `preprocessed_files.pkl`, in order (the QSL's sample order)."""
    with open(os.path.join(data_dir, CASE_LIST), "rb") as f:
        names = pickle.load(f)
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise UsageError(f"{data_dir}/{CASE_LIST} is not a list of case names. {HOW}")
    return tuple(names)


def _pad(a: np.ndarray, fill, shape=PADDED_SHAPE) -> np.ndarray:
    """Centre `a` (spatial axes first) in `shape` as the reference pads: (p - r) // 2 before."""
    size = a.shape[:3]
    if any(r > p for r, p in zip(size, shape, strict=True)):
        raise UsageError(f"a case of size {size} does not fit the reference's {shape}.")
    before = [(p - r) // 2 for p, r in zip(shape, size, strict=True)]
    pads = [(b, p - r - b) for b, p, r in zip(before, shape, size, strict=True)]
    pads += [(0, 0)] * (a.ndim - 3)
    return np.pad(a, pads, constant_values=fill)


def load_case(data_dir: str, label_dir: str, name: str,
              shape: tuple[int, int, int] = PADDED_SHAPE) -> tuple[np.ndarray, np.ndarray]:
    """(image [*shape, 4] float32, label [*shape] int32, IGNORE outside the case) of one case
    (`shape`: the reference's 224x224x160 padding); `UsageError` when its label does not match
    its properties."""
    import nibabel as nib

    with open(os.path.join(data_dir, f"{name}.pkl"), "rb") as f:
        data, props = pickle.load(f)
    data = np.asarray(data, np.float32)
    if data.ndim != 4 or data.shape[0] != 4:
        raise UsageError(f"{name}.pkl holds data of shape {data.shape}; the reference's is "
                         f"[4 modalities, x, y, z]. {HOW}")
    size = tuple(int(s) for s in props["size_after_cropping"])
    bbox = [tuple(int(v) for v in b) for b in props["crop_bbox"]]
    seg = np.asarray(nib.load(os.path.join(label_dir, f"{name}.nii.gz")).dataobj)
    seg = np.transpose(seg, (2, 1, 0))  # nibabel's (x, y, z) -> SimpleITK's (z, y, x)
    seg = seg[tuple(slice(lo, hi) for lo, hi in bbox)].astype(np.int32)
    if seg.shape != size:
        raise UsageError(f"{name}: the label cut to crop_bbox {bbox} has shape {seg.shape}, "
                         f"not size_after_cropping {size}: label_dir and data dir do not match.")
    if not set(np.unique(seg).tolist()) <= {0, 1, 2, 3}:
        raise UsageError(f"{name}: labels {sorted(np.unique(seg).tolist())} are not nnU-Net's "
                         "0-3 (Task043_BraTS_2019.py converts BraTS's 0/1/2/4).")
    image = np.moveaxis(data, 0, -1)
    if image.shape[:3] != tuple(shape):
        if image.shape[:3] != size:
            raise UsageError(f"{name}: data of shape {image.shape[:3]} is neither the padded "
                             f"{tuple(shape)} nor size_after_cropping {size}.")
        image = _pad(image, 0.0, shape)
    return image, _pad(seg, IGNORE, shape)


def eval_arrays(config) -> dict[str, np.ndarray]:
    """Every case in the case list's order (at most eval.samples): inputs and label arrays."""
    names = case_names(str(config.data.dir))[: int(config.eval.samples)]
    shape = tuple(config.data.eval_shape)
    rows = [load_case(str(config.data.dir), str(config.data.label_dir), n, shape)
            for n in names]
    return {"inputs": np.stack([r[0] for r in rows]), "label": np.stack([r[1] for r in rows])}


def eval_batches(config, process_index: int, process_count: int) -> Iterator[dict]:
    """The cases in order, padded with mask 0 to whole eval batches."""
    from tpubench.loops import feed as data

    return data.in_memory_eval_batches(eval_arrays(config), config.eval.batch_size,
                                       process_index, process_count)


def train_batches(config, start_step: int, process_index: int,
                  process_count: int) -> Iterator[dict]:
    """Random `data.train_shape` patches of the cases with random flips, example j of step s
    from np.random.default_rng([seed, s, j]) (the data position is the step)."""
    names = case_names(str(config.data.dir))
    shape = tuple(config.data.train_shape)
    local = config.data.global_batch_size // process_count
    step = start_step
    while True:
        xs, ys = [], []
        for j in range(process_index * local, (process_index + 1) * local):
            rng = np.random.default_rng([config.run.seed, step, j])
            image, label = load_case(str(config.data.dir), str(config.data.label_dir),
                                     names[rng.integers(len(names))],
                                     tuple(config.data.eval_shape))
            corner = [rng.integers(0, n - s + 1) for n, s in zip(label.shape, shape,
                                                                 strict=True)]
            sl = tuple(slice(c, c + s) for c, s in zip(corner, shape, strict=True))
            x, y = image[sl], label[sl]
            axes = tuple(int(a) for a in np.nonzero(rng.random(3) < 0.5)[0])
            xs.append(np.flip(x, axes) if axes else x)
            ys.append(np.flip(y, axes) if axes else y)
        yield {"inputs": np.stack(xs), "label": np.stack(ys)}
        step += 1
