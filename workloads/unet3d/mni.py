"""The mini's data: the MNI ICBM152 2009a symmetric template shipped in the PyPI package
`nilearn` (`nilearn/datasets/data/mni_icbm152_{t1,gm,wm}_tal_nlin_sym_09a_converted.nii.gz`:
a skull-stripped T1 volume, 197x233x189 at 1 mm, and grey/white-matter probability maps, uint8
0-255). nilearn 0.14 ships no CSF map, so the four classes (as the reference's four: background
+ three labels) are: 0 outside the brain (T1 == 0), 1 other brain tissue (CSF, vessels: T1 > 0,
neither GM nor WM the most probable), 2 grey matter, 3 white matter, the most probable of
(1 - p_gm - p_wm, p_gm, p_wm) inside the brain.

Preprocessing, once per process: 2x2x2 mean pooling to 2 mm (98x116x94: a 32^3 crop then spans
64 mm of brain), labels from the pooled probabilities and the pooled T1 mask.

The corruption that makes it a segmentation task: the template's T1 is an average of 152
registered brains, and its tissue maps follow its intensity so closely that per-voxel intensity
thresholds reach mean Dice 0.95 on clean 32^3 crops (baselines/unet3d.py). So every
crop gets what real MR images have and the template averaged away: a smooth multiplicative bias
field (exp of a random quadratic in coordinates that span [-1, 1] over FIELD_SPAN_VOXELS = 32
voxels, 64 mm, so that its inhomogeneity per mm does not depend on the crop size: the
inhomogeneity nnU-Net's data sees) and Gaussian noise, both in the brain only; then nnU-Net's
MRI normalisation per crop (z-score over the crop's brain voxels, zero outside). Training crops
draw it afresh (random per example); eval crop i always gets the draw of
np.random.default_rng([EVAL_SEED, i]).

Split (no voxel of an eval crop is ever in a training crop): along the anterior-posterior axis
(axis 1, the one that is NOT the template's mirror axis, so a left-right flip of a training crop
is not an eval crop): training crops lie entirely in y < TRAIN_Y_END (posterior 120 mm:
occipital and parietal lobes, cerebellum), eval crops entirely in y >= EVAL_Y_START (the
anterior brain: frontal lobes); EVAL_Y_START >= TRAIN_Y_END.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import numpy as np

from tpubench.errors import UsageError

FILES = {k: f"mni_icbm152_{k}_tal_nlin_sym_09a_converted.nii.gz" for k in ("t1", "gm", "wm")}
CLASS_NAMES = ("outside", "other brain tissue", "grey matter", "white matter")
POOL = 2
TRAIN_Y_END = 60
EVAL_Y_START = 60
EVAL_SEED = 20_191_111
BIAS_STRENGTH = 0.5  # std of the field's linear and quadratic coefficients (log scale)
FIELD_SPAN_VOXELS = 32  # the field's coordinates run over [-1, 1] across 32 voxels (64 mm)
NOISE = 0.15  # noise std as a share of the crop's mean brain intensity
MIN_BRAIN_FRACTION = 0.1  # a training crop holds at least this much brain (nnU-Net also
# over-samples foreground); eval crops too, so that no eval crop is all background
INSTALL_HELP = ("The unet3d mini reads the MNI ICBM152 template shipped in the PyPI package "
                "`nilearn` (read with `nibabel`). Install them with: pip install "
                "'tpubench[medical]' (or pip install nilearn nibabel).")


def data_dir() -> str:
    """nilearn's bundled data folder; `UsageError` with the install command without it."""
    try:
        import nibabel  # noqa: F401
        import nilearn
    except ImportError as e:
        raise UsageError(INSTALL_HELP) from e
    d = os.path.join(os.path.dirname(nilearn.__file__), "datasets", "data")
    missing = [f for f in FILES.values() if not os.path.isfile(os.path.join(d, f))]
    if missing:
        raise UsageError(f"nilearn at {d} lacks {missing}. {INSTALL_HELP}")
    return d


def check(config=None) -> None:
    """The files are there (paths only, nothing read)."""
    del config
    data_dir()


def _pool(a: np.ndarray) -> np.ndarray:
    s = [n - n % POOL for n in a.shape]
    a = a[: s[0], : s[1], : s[2]]
    return a.reshape(s[0] // POOL, POOL, s[1] // POOL, POOL, s[2] // POOL, POOL).mean((1, 3, 5))


@functools.lru_cache(maxsize=1)
def load() -> tuple[np.ndarray, np.ndarray]:
    """(T1 [X, Y, Z, 1] float32, pooled, 0 outside the brain; labels [X, Y, Z] int32),
    read-only, once."""
    import nibabel as nib

    d = data_dir()
    vol = {k: np.asarray(nib.load(os.path.join(d, f)).dataobj, np.float32) for k, f in
           FILES.items()}
    t1 = _pool(vol["t1"])
    gm, wm = _pool(vol["gm"] / 255.0), _pool(vol["wm"] / 255.0)
    brain = _pool((vol["t1"] > 0).astype(np.float32)) >= 0.5
    tissue = np.argmax(np.stack([np.clip(1.0 - gm - wm, 0.0, 1.0), gm, wm]), 0) + 1
    labels = np.where(brain, tissue, 0).astype(np.int32)
    image = np.where(brain, t1, 0.0).astype(np.float32)[..., None]
    image.setflags(write=False)
    labels.setflags(write=False)
    return image, labels


def _starts(lo: int, hi: int, size: int, stride: int) -> list[int]:
    """Tile starts covering [lo, hi) with crops of `size` every `stride` voxels (the last one
    flush with hi)."""
    if hi - lo < size:
        raise ValueError(f"a region of {hi - lo} voxels cannot hold a crop of {size}")
    starts = list(range(lo, hi - size + 1, max(1, stride)))
    if starts[-1] + size < hi:
        starts.append(hi - size)
    return starts


def eval_stride(config) -> int:
    """Voxels between eval tiles: `data.eval_tile_stride`, or half a crop (overlapping)."""
    return int(config.data.get("eval_tile_stride", 0)) or int(config.data.crop_size) // 2


@functools.lru_cache(maxsize=4)
def eval_corners(crop: int, stride: int | None = None) -> np.ndarray:
    """[N, 3] corners of the eval crops: tiles every `stride` voxels (default crop // 2:
    half-overlapping) of the region y >= EVAL_Y_START (eval crops may overlap each other, never
    a training crop) that hold at least MIN_BRAIN_FRACTION brain, in x, y, z order."""
    _, labels = load()
    x, y, z = labels.shape
    stride = stride or crop // 2
    out = []
    for cx in _starts(0, x, crop, stride):
        for cy in _starts(EVAL_Y_START, y, crop, stride):
            for cz in _starts(0, z, crop, stride):
                if (labels[cx:cx + crop, cy:cy + crop, cz:cz + crop] > 0).mean() >= \
                        MIN_BRAIN_FRACTION:
                    out.append((cx, cy, cz))
    return np.asarray(out, np.int64)


def crop_at(corner, crop: int) -> tuple[np.ndarray, np.ndarray]:
    """(clean T1 [c, c, c, 1], labels [c, c, c]) of the crop at `corner`."""
    image, labels = load()
    cx, cy, cz = (int(v) for v in corner)
    sl = (slice(cx, cx + crop), slice(cy, cy + crop), slice(cz, cz + crop))
    return image[sl], labels[sl]


def corrupt(t1: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bias field and noise on a clean crop's brain, then the per-crop z-score (see above)."""
    x = t1[..., 0].astype(np.float64)
    brain = x > 0
    if not brain.any():
        return np.zeros_like(t1)
    # Coordinates in units of FIELD_SPAN_VOXELS / 2, centred on the crop: the field has the same
    # inhomogeneity per mm whatever the crop size (a 32^3 crop spans [-1, 1]).
    grid = np.meshgrid(*[np.linspace(-1.0, 1.0, n) * (n - 1) / (FIELD_SPAN_VOXELS - 1)
                         for n in x.shape], indexing="ij")
    terms = list(grid) + [g * h for i, g in enumerate(grid) for h in grid[i:]]
    log_field = sum(rng.normal(0.0, BIAS_STRENGTH) * t for t in terms)
    log_field -= log_field[brain].mean()
    y = x * np.exp(log_field)
    y = y + rng.normal(0.0, NOISE * y[brain].mean(), x.shape)
    mean, std = y[brain].mean(), y[brain].std() + 1e-8
    return np.where(brain, (y - mean) / std, 0.0).astype(np.float32)[..., None]


def train_corner(rng: np.random.Generator, crop: int) -> tuple[int, int, int]:
    """A random training crop's corner: the crop lies entirely in y < TRAIN_Y_END and holds
    >= MIN_BRAIN_FRACTION brain (redrawn otherwise, up to 100 times)."""
    _, labels = load()
    x, _, z = labels.shape
    for _ in range(100):
        corner = (int(rng.integers(0, x - crop + 1)), int(rng.integers(0, TRAIN_Y_END - crop + 1)),
                  int(rng.integers(0, z - crop + 1)))
        if (crop_at(corner, crop)[1] > 0).mean() >= MIN_BRAIN_FRACTION:
            break
    return corner


def train_example(rng: np.random.Generator, crop: int) -> tuple[np.ndarray, np.ndarray]:
    """One random training crop (`train_corner`), corrupted afresh, flipped along each axis
    with probability 1/2 (nnU-Net's mirroring)."""
    img, lab = crop_at(train_corner(rng, crop), crop)
    img = corrupt(img, rng)
    flips = rng.random(3) < 0.5
    axes = tuple(int(a) for a in np.nonzero(flips)[0])
    if axes:
        img, lab = np.flip(img, axes), np.flip(lab, axes)
    return np.ascontiguousarray(img), np.ascontiguousarray(lab)


def train_batches(config, start_step: int, process_index: int,
                  process_count: int) -> Iterator[dict[str, np.ndarray]]:
    """This process's slice of every global train batch, from `start_step`; example j of step
    s is drawn from np.random.default_rng([seed, s, j]) (the data position is the step)."""
    crop = int(config.data.crop_size)
    local = config.data.global_batch_size // process_count
    step = start_step
    while True:
        rows = [train_example(np.random.default_rng([config.run.seed, step, j]), crop)
                for j in range(process_index * local, (process_index + 1) * local)]
        yield {"inputs": np.stack([r[0] for r in rows]),
               "label": np.stack([r[1] for r in rows])}
        step += 1


@functools.lru_cache(maxsize=2)
def eval_arrays(crop: int, stride: int | None = None) -> dict[str, np.ndarray]:
    """Every eval crop (`eval_corners`), in corner order: inputs [N, c, c, c, 1], label
    [N, c, c, c]."""
    rows = [crop_at(c, crop) for c in eval_corners(crop, stride)]
    inputs = [corrupt(r[0], np.random.default_rng([EVAL_SEED, i])) for i, r in enumerate(rows)]
    out = {"inputs": np.stack(inputs), "label": np.stack([r[1] for r in rows])}
    for a in out.values():
        a.setflags(write=False)  # cached: shared by every eval of the process
    return out


def eval_batches(config, process_index: int, process_count: int):
    """The eval crops in order, padded with mask 0 to whole eval batches."""
    from tpubench.loops import feed as data

    return data.in_memory_eval_batches(eval_arrays(int(config.data.crop_size),
                                                   eval_stride(config)),
                                       config.eval.batch_size, process_index, process_count)
