"""MLPerf Training v0.7 quality targets and required run counts, as the rules state them.

Run counts come from `mlperf_logging.benchmark_meta` (the official table); the targets are those
the official compliance checker's `training_0.7.0/closed_<benchmark>.yaml` files test.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlperf_logging.benchmark_meta import get_result_file_counts

# benchmark -> (name of the metric for people, {metric key in the log value: threshold}).
# A float-valued eval_accuracy uses the key "quality"; Mask R-CNN logs {"BBOX":..,"SEGM":..}.
_V07_TARGETS: dict[str, tuple[str, dict[str, float]]] = {
    "resnet": ("top-1 accuracy", {"quality": 0.759}),
    "ssd": ("mAP", {"quality": 0.230}),
    "maskrcnn": ("box mAP / mask mAP", {"BBOX": 0.377, "SEGM": 0.339}),
    "gnmt": ("BLEU/100", {"quality": 0.240}),
    "transformer": ("BLEU/100", {"quality": 0.250}),
    "bert": ("masked-LM accuracy", {"quality": 0.712}),
    "dlrm": ("AUC", {"quality": 0.8025}),
    "minigo": ("win rate vs reference", {"quality": 0.50}),
}
# BERT's target is relaxed for very large batches (closed_bert.yaml).
_BERT_LARGE_BATCH = 8192
_BERT_LARGE_BATCH_TARGET = 0.706


@dataclasses.dataclass(frozen=True)
class QualityTarget:
    """A quality target: every metric in `thresholds` must reach its value.

    The first metric is the primary one: the one quality curves plot.
    """

    metric: str
    thresholds: dict[str, float]
    higher_is_better: bool = True

    @property
    def primary_key(self) -> str:
        """The metric key that curves plot."""
        return next(iter(self.thresholds))

    @property
    def primary_threshold(self) -> float:
        """The threshold of the primary metric (the target line on plots)."""
        return self.thresholds[self.primary_key]

    def primary_value(self, value: Any) -> float | None:
        """The primary metric of a logged value (a number, or a dict of metrics)."""
        if isinstance(value, dict):
            v = value.get(self.primary_key)
            return None if v is None else float(v)
        if isinstance(value, int | float):
            return float(value)
        return None

    def reached(self, value: Any) -> bool:
        """True when a logged value meets every threshold; NaN and missing metrics never do."""
        values = value if isinstance(value, dict) else {self.primary_key: value}
        for key, threshold in self.thresholds.items():
            v = values.get(key)
            if not isinstance(v, int | float) or v != v:
                return False
            if (v < threshold) if self.higher_is_better else (v > threshold):
                return False
        return True

    def describe(self) -> str:
        """'top-1 accuracy >= 0.759' (or each metric of a multi-metric target)."""
        op = ">=" if self.higher_is_better else "<="
        if list(self.thresholds) == ["quality"]:
            return f"{self.metric} {op} {self.primary_threshold:g}"
        return ", ".join(f"{k} {op} {v:g}" for k, v in self.thresholds.items())


def target_for(benchmark: str, global_batch_size: Any = None) -> QualityTarget | None:
    """The v0.7 closed-division target of an MLPerf benchmark; None for other names."""
    if benchmark not in _V07_TARGETS:
        return None
    metric, thresholds = _V07_TARGETS[benchmark]
    thresholds = dict(thresholds)
    if (
        benchmark == "bert"
        and isinstance(global_batch_size, int | float)
        and global_batch_size >= _BERT_LARGE_BATCH
    ):
        thresholds["quality"] = _BERT_LARGE_BATCH_TARGET
    return QualityTarget(metric, thresholds)


def required_runs(benchmark: str) -> int | None:
    """Runs an MLPerf Training result needs (5 or 10), from the official table; None if unknown."""
    return get_result_file_counts("training").get(benchmark)
