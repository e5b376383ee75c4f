"""Reading what LoadGen wrote: `mlperf_log_detail.txt` and `mlperf_log_accuracy.json`.

The detail log is one `:::MLLOG {json}` record per line; the result keys (`result_validity`,
`result_invalid_reason`, `early_stopping_*`, latency percentiles, samples/s) are what the
summary reports, so a run LoadGen calls INVALID is reported INVALID with LoadGen's own words.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import numpy as np

DETAIL = "mlperf_log_detail.txt"
ACCURACY = "mlperf_log_accuracy.json"
_PREFIX = ":::MLLOG "


def read_detail(outdir: str | os.PathLike) -> dict[str, Any]:
    """Key -> value of every record (the last one wins), plus "errors" and "warnings" lists."""
    records: dict[str, Any] = {"errors": [], "warnings": []}
    for line in (pathlib.Path(outdir) / DETAIL).read_text().splitlines():
        if not line.startswith(_PREFIX):
            continue
        rec = json.loads(line[len(_PREFIX) :])
        meta = rec.get("metadata", {})
        if meta.get("is_error"):
            records["errors"].append(f"{rec['key']}: {rec['value']}")
        elif meta.get("is_warning"):
            records["warnings"].append(f"{rec['key']}: {rec['value']}")
        records[rec["key"]] = rec["value"]
    return records


def _ms(records: dict[str, Any], key: str) -> float | None:
    value = records.get(key)
    return None if value is None else float(value) / 1e6


def performance_summary(records: dict[str, Any], scenario: str) -> dict[str, Any]:
    """Validity, LoadGen's reasons, throughput and p50/p90/p99 latency (ms) of a run."""
    out: dict[str, Any] = {
        "validity": records.get("result_validity", "UNKNOWN"),
        "invalid_reasons": [],
        "min_duration_met": records.get("result_min_duration_met"),
        "min_queries_met": records.get("result_min_queries_met"),
        "early_stopping_met": records.get("early_stopping_met"),
        "query_count": records.get("result_query_count"),
        "samples_per_query": records.get("effective_samples_per_query"),
    }
    if "result_perf_constraints_met" in records:
        out["perf_constraints_met"] = records["result_perf_constraints_met"]
    reason = (records.get("result_invalid_reason") or "").strip()
    if reason:
        out["invalid_reasons"].append(reason)
    if out["validity"] != "VALID":
        for flag, text in (
            ("min_duration_met", "min duration not met"),
            ("min_queries_met", "min query count not met"),
            ("perf_constraints_met", "latency bound not met (too many queries over it)"),
            ("early_stopping_met", "early stopping not met: "
             + (records.get("early_stopping_result") or "").strip()),
        ):
            if out.get(flag) is False:
                out["invalid_reasons"].append(text)
    out["invalid_reasons"] += records["errors"]
    per_query = scenario == "MultiStream"
    for p in ("50.00", "90.00", "99.00"):
        key = f"result_{p}_percentile_{'per_query_' if per_query else ''}latency_ns"
        out[f"p{p.split('.')[0]}_latency_ms"] = _ms(records, key)
    if scenario == "Server":
        out["scheduled_samples_per_s"] = records.get("result_scheduled_samples_per_sec")
        out["completed_samples_per_s"] = records.get("result_completed_samples_per_sec")
        out["target_qps"] = records.get("effective_target_qps")
        out["latency_bound_ms"] = _ms(records, "effective_target_latency_ns")
    elif scenario == "Offline":
        out["samples_per_s"] = records.get("result_samples_per_second")
    elif scenario == "SingleStream":
        out["samples_per_s"] = records.get("result_qps_with_loadgen_overhead")
        out["early_stopping_p90_latency_ms"] = _ms(records, "early_stopping_latency_ss")
    else:  # MultiStream: the metric is the p99 per-query latency for a fixed query size.
        mean_ms = _ms(records, "result_mean_query_latency_ns")
        spq = records.get("effective_samples_per_query") or 0
        out["samples_per_s"] = spq * 1e3 / mean_ms if mean_ms else None
        out["early_stopping_p99_latency_ms"] = _ms(records, "early_stopping_latency_ms")
    return out


def read_accuracy_log(
    outdir: str | os.PathLike, dtype: np.dtype, row_shape: tuple[int, ...]
) -> dict[int, np.ndarray]:
    """Sample index -> the response bytes LoadGen logged, decoded as `dtype` of `row_shape`."""
    entries = json.loads((pathlib.Path(outdir) / ACCURACY).read_text() or "[]")
    out = {}
    for e in entries:
        row = np.frombuffer(bytes.fromhex(e["data"]), dtype=dtype)
        out[int(e["qsl_idx"])] = row.reshape(row_shape)
    return out
