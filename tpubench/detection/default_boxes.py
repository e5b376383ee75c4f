"""SSD default (anchor) boxes, exactly as the MLPerf v0.7 reference generates them.

Source: mlcommons/training single_stage_detector/ssd/utils.py `DefaultBoxes.__init__` and
train.py `dboxes300_coco()`: per feature map k, sizes s_k = scales[k] / fig_size and
s'_k = sqrt(s_k * s_{k+1}) (both square), then (s_k sqrt(a), s_k / sqrt(a)) and its transpose for
each aspect ratio a; for each size, every cell (i, j) in row-major order with centre
((j + 0.5) / f_k, (i + 0.5) / f_k), f_k = fig_size / steps[k]; all clamped to [0, 1] (in xywh,
as the reference clamps). The order (feature map, size, row, column) is the order of the model's
outputs (ssd300.py `bbox_view`), so anchors and predictions line up.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from tpubench.detection import boxes


@dataclasses.dataclass(frozen=True)
class AnchorSpec:
    """What `DefaultBoxes` takes: fig_size, feat_size, steps, scales (len(feat_size) + 1) and
    aspect_ratios (one tuple per feature map)."""

    fig_size: int
    feat_size: tuple[int, ...]
    steps: tuple[int, ...]
    scales: tuple[float, ...]
    aspect_ratios: tuple[tuple[float, ...], ...]

    def __post_init__(self):
        n = len(self.feat_size)
        if not (len(self.steps) == n == len(self.aspect_ratios) and len(self.scales) == n + 1):
            raise ValueError(f"AnchorSpec: inconsistent lengths in {self}")

    @property
    def boxes_per_cell(self) -> tuple[int, ...]:
        """2 square sizes + 2 per aspect ratio: (4, 6, 6, 6, 4, 4) for SSD300."""
        return tuple(2 + 2 * len(a) for a in self.aspect_ratios)

    @property
    def num_boxes(self) -> int:
        return sum(n * f * f for n, f in zip(self.boxes_per_cell, self.feat_size, strict=True))


# train.py dboxes300_coco(): 8,732 boxes.
SSD300_COCO = AnchorSpec(
    fig_size=300, feat_size=(38, 19, 10, 5, 3, 1), steps=(8, 16, 32, 64, 100, 300),
    scales=(21, 45, 99, 153, 207, 261, 315),
    aspect_ratios=((2,), (2, 3), (2, 3), (2, 3), (2,), (2,)))


def default_boxes(spec: AnchorSpec) -> np.ndarray:
    """[num_boxes, 4] float32 xywh in [0, 1], in the reference's order."""
    fk = spec.fig_size / np.array(spec.steps, np.float64)
    out = []
    for idx, sfeat in enumerate(spec.feat_size):
        sk1 = spec.scales[idx] / spec.fig_size
        sk2 = spec.scales[idx + 1] / spec.fig_size
        sk3 = math.sqrt(sk1 * sk2)
        sizes = [(sk1, sk1), (sk3, sk3)]
        for alpha in spec.aspect_ratios[idx]:
            w, h = sk1 * math.sqrt(alpha), sk1 / math.sqrt(alpha)
            sizes += [(w, h), (h, w)]
        for w, h in sizes:
            for i, j in itertools.product(range(sfeat), repeat=2):
                out.append(((j + 0.5) / fk[idx], (i + 0.5) / fk[idx], w, h))
    return np.clip(np.asarray(out, np.float32), 0.0, 1.0)


def default_boxes_ltrb(spec: AnchorSpec) -> np.ndarray:
    """The same boxes as ltrb (the reference's `dboxes(order="ltrb")`, used for IoU)."""
    return boxes.xywh_to_ltrb(default_boxes(spec))
