"""MLPerf Training v0.7 quality targets and required run counts, as `tpubench.mlperf.rules` states
them.

`tpubench.mlperf.rules` is the one source of truth (the 0.7.0 checker's targets, BERT 0.712 at every
batch size); this module only turns its thresholds into `QualityTarget`s the report can test
logged values against. A target is never taken from a run's own summary for an MLPerf run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tpubench.mlperf import rules


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
            return float(v) if isinstance(v, int | float) else None
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


def target_for(benchmark: str) -> QualityTarget | None:
    """The v0.7 target of an MLPerf benchmark (`tpubench.mlperf.rules`); None for other names."""
    if benchmark not in rules.TARGETS:
        return None
    metric, thresholds = rules.TARGETS[benchmark]
    return QualityTarget(metric, dict(thresholds))


def required_runs(benchmark: str) -> int | None:
    """Runs a v0.7 result needs (5 or 10, `tpubench.mlperf.rules`); None for other names."""
    return rules.required_runs(benchmark)
