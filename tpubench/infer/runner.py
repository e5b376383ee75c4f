"""Running one LoadGen test (any scenario, either mode) and the Server QPS search.

`Engine` is everything prepared before a run and reused across runs: the samples on the host,
the parameters, and one compiled executable per batch bucket (and length bucket, when the spec
has `length_buckets`) with its measured latency (the untimed warm-up). `run` builds the
explicit settings, runs LoadGen in the output directory, and returns (and writes) the
summary: LoadGen's validity and reasons, throughput, latency percentiles and, in accuracy mode,
the metric decoded from `mlperf_log_accuracy.json`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import time
from collections.abc import Sequence
from typing import Any

import jax
import mlperf_loadgen as lg
import numpy as np

from tpubench.errors import UsageError
from tpubench.infer import labels, logs
from tpubench.infer.compiles import CompileCounter
from tpubench.infer.qsl import QuerySampleLibrary
from tpubench.infer.settings import Mode, RunSettings, Scenario, check_no_audit_config
from tpubench.infer.spec import InferenceSpec, PyTree
from tpubench.infer.sut import BatchingSUT, Bucket, compile_buckets, server_batching

DEFAULT_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
# Where a Server run starts when no target QPS is given: a Python SUT issues one LoadGen query
# per sample and tops out at a few thousand queries/s per host core whatever the accelerator.
SERVER_START_QPS_CAP = 2000.0
OFFLINE_QPS_MARGIN = 2.0
SUMMARY = "summary.json"


@dataclasses.dataclass
class Engine:
    """Samples, parameters and compiled buckets, ready for any number of LoadGen runs."""

    spec: InferenceSpec
    params: PyTree
    model_state: PyTree
    qsl: QuerySampleLibrary
    buckets: dict[int, Bucket]
    response: jax.ShapeDtypeStruct  # one sample's response
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def prepare(
        cls,
        spec: InferenceSpec,
        params: PyTree,
        model_state: PyTree,
        batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
        info: dict[str, Any] | None = None,
        length_buckets: Sequence[int] | None = None,
    ) -> Engine:
        """Load the samples, compile every bucket and time it. All of this is untimed.
        `length_buckets`: the spec's unless given (`()`: one length, the inputs' own)."""
        t0 = time.perf_counter()
        samples = spec.load_samples()
        lengths = spec.length_buckets if length_buckets is None else tuple(length_buckets)
        qsl = QuerySampleLibrary(samples, spec.performance_sample_count, lengths)
        largest = int(samples.sample_rows(range(samples.count)).max())
        if largest > max(batch_sizes):
            raise UsageError(f"The largest {spec.mlperf_name} sample has {largest} rows, more "
                             f"than the largest batch bucket ({max(batch_sizes)}): pass "
                             f"--batch-sizes with a size >= {largest}.")
        t1 = time.perf_counter()
        buckets = compile_buckets(spec.apply, params, model_state, qsl, batch_sizes)
        out = jax.eval_shape(spec.apply, params, model_state, qsl.example_batch(1))
        info = dict(info or {})
        info.update(load_samples_s=round(t1 - t0, 3), compile_s=round(time.perf_counter() - t1, 3))
        if qsl.padded_lengths is not None:
            # padded positions summed over the samples: the compute the buckets save
            info["length_buckets"] = {"buckets": sorted(set(int(n) for n in lengths)),
                                      "compiled": qsl.lengths_used(),
                                      "padded_positions": qsl.padded_positions()}
        response = jax.ShapeDtypeStruct(out.shape[1:], out.dtype)
        return cls(spec, params, model_state, qsl, buckets, response, info)

    def throughput_estimate(self, max_batch: int | None = None) -> float:
        """Samples/s of back-to-back batches of `max_batch` (default: the largest bucket), from
        the fastest warm-up run."""
        b = max_batch or max(self.buckets)
        return b / self._mean_best_latency_s(self.buckets[b]) / self.mean_sample_rows()

    def _mean_best_latency_s(self, bucket: Bucket) -> float:
        """The bucket's fastest warm-up latency; with length buckets, its mean over the
        samples, each at the length it is served at (a batch is one length)."""
        def best(k: Bucket) -> float:
            return k.best_latency_s or k.latency_s

        padded = self.qsl.padded_lengths
        if padded is None or not bucket.lengths:
            return best(bucket)
        used, counts = np.unique(padded, return_counts=True)
        return float(sum(c * best(bucket.at(int(n))) for n, c in zip(used, counts, strict=True))
                     / counts.sum())

    def mean_sample_rows(self) -> float:
        """Rows per sample on average (1 unless samples are variable-size; buckets count
        rows, LoadGen counts samples)."""
        samples = self.qsl.samples
        if samples.row_splits is None:
            return 1.0
        return float(samples.row_splits[-1] - samples.row_splits[0]) / samples.count

    def latency_estimate_ms(self, batch: int) -> float:
        """The best measured latency of the smallest bucket that holds `batch` samples.

        The best, not the typical: LoadGen pre-generates min_duration / expected_latency
        queries, so an over-estimate (one slow warm-up call on a busy host) leaves too few to
        fill the minimum duration and the run is INVALID ("min duration not met"), while an
        under-estimate only makes it longer."""
        batch = int(np.ceil(batch * self.mean_sample_rows()))
        size = next((s for s in sorted(self.buckets) if s >= batch), max(self.buckets))
        return self._mean_best_latency_s(self.buckets[size]) * 1e3

    def default_settings(
        self, scenario: Scenario, mode: Mode, profile: str, expected_qps: float = 0.0,
        multistream_samples_per_query: int = 8,
    ) -> RunSettings:
        """Explicit settings; a missing expected QPS/latency comes from the warm-up timing.

        Offline: twice the best full-bucket throughput (an over-estimate only lengthens the
        run; an under-estimate makes it INVALID, and warm-up timings on a busy host are
        noisy). Server: half of the throughput at the Server batch, capped at
        `SERVER_START_QPS_CAP` (use `server_search` to find the real figure).
        """
        if not expected_qps:
            if scenario is Scenario.OFFLINE:
                expected_qps = OFFLINE_QPS_MARGIN * self.throughput_estimate(
                    self.best_offline_batch())
            elif scenario is Scenario.SERVER:
                max_batch, _ = server_batching(self.buckets, self.spec.server_latency_bound_ms)
                expected_qps = min(0.5 * self.throughput_estimate(max_batch),
                                   SERVER_START_QPS_CAP)
            else:
                expected_qps = 1.0
        batch = multistream_samples_per_query if scenario is Scenario.MULTI_STREAM else 1
        return RunSettings(
            scenario=scenario,
            mode=mode,
            profile=profile,
            expected_qps=round(float(expected_qps), 3),
            latency_bound_ms=self.spec.server_latency_bound_ms,
            expected_latency_ms=round(self.latency_estimate_ms(batch), 4),
            multistream_samples_per_query=multistream_samples_per_query,
        )

    def batching(self, settings: RunSettings) -> tuple[int, float]:
        """(max_batch, max_wait_s) of the SUT for this scenario."""
        if settings.scenario is Scenario.SERVER:
            return server_batching(self.buckets, settings.latency_bound_ms)
        if settings.scenario is Scenario.OFFLINE:
            return self.best_offline_batch(), 0.0
        return max(self.buckets), 0.0

    def best_offline_batch(self) -> int:
        """The bucket with the highest measured samples/s (on CPUs the largest batch is often
        slower per sample than a middle one)."""
        return max(self.buckets, key=self.throughput_estimate)

    def run(
        self,
        settings: RunSettings,
        outdir: str | os.PathLike,
        max_batch: int | None = None,
        max_wait_ms: float | None = None,
    ) -> dict[str, Any]:
        """One LoadGen test into `outdir` (must not hold a summary yet); returns the summary."""
        outdir = pathlib.Path(outdir)
        if (outdir / SUMMARY).exists():
            raise UsageError(f"{outdir / SUMMARY} exists; results are never overwritten. "
                             "Pass a new --workdir.")
        outdir.mkdir(parents=True, exist_ok=True)
        check_no_audit_config()
        auto_batch, auto_wait = self.batching(settings)
        max_batch = max_batch or auto_batch
        max_wait_s = auto_wait if max_wait_ms is None else max_wait_ms / 1e3
        log_settings = lg.LogSettings()
        log_settings.log_output.outdir = str(outdir)
        log_settings.log_output.copy_summary_to_stdout = False
        log_settings.enable_trace = False
        test_settings = settings.to_loadgen()
        t0 = time.perf_counter()
        with self.qsl as qsl, BatchingSUT(
            qsl, self.buckets, self.params, self.model_state, max_batch, max_wait_s
        ) as sut, CompileCounter() as compiles:
            lg.StartTestWithLogSettings(sut.handle, qsl.handle, test_settings, log_settings)
            batches_run = dict(sut.batches_run)
            by_length = dict(sut.batches_by_length)
        wall_s = time.perf_counter() - t0
        if sut.error is not None:
            raise RuntimeError(f"the SUT failed during the run: {sut.error!r}") from sut.error
        records = logs.read_detail(outdir)
        reasons = labels.not_mlperf_reasons(
            settings.profile, self.spec.benchmark_model_and_data,
            str(self.info.get("config", "?")), str(self.info.get("params", "")),
            self.spec.mlperf_name, str(self.info.get("samples", "")),
            loadgen_version=str(records.get("loadgen_version") or ""),
        )
        if self.spec.scenarios and settings.scenario.value not in self.spec.scenarios:
            reasons.append(f"{settings.scenario.value} is not a v0.7 scenario of "
                           f"{self.spec.mlperf_name} ({', '.join(self.spec.scenarios)})")
        summary: dict[str, Any] = {
            **labels.label_fields(self.spec.mlperf_name, reasons),
            "scenario": settings.scenario.value,
            "mode": settings.mode.value,
            "profile": settings.profile,
            "loadgen_version": records.get("loadgen_version"),
            # The seeds LoadGen says it used (its `effective_*` records).
            "loadgen_seeds": {k: records.get(f"effective_{k}_rng_seed")
                              for k in ("qsl", "sample_index", "schedule")},
            **self.info,
        }
        if settings.mode is Mode.PERFORMANCE:
            summary.update(logs.performance_summary(records, settings.scenario.value))
            bound = self.spec.multistream_latency_bound_ms
            if settings.scenario is Scenario.MULTI_STREAM and bound:
                summary["v07_multistream_bound_ms"] = bound
                summary["v07_multistream_bound_met"] = (summary["p99_latency_ms"] or 1e30) <= bound
        else:
            summary.update(self.accuracy(outdir))
        summary["settings"] = settings.describe()
        summary["sut"] = {
            "max_batch": max_batch,
            "max_wait_ms": round(max_wait_s * 1e3, 3),
            "batches_run": {str(k): v for k, v in sorted(batches_run.items())},
            "bucket_latency_ms": {
                str(b): round(k.latency_s * 1e3, 4) for b, k in sorted(self.buckets.items())
            },
            # length bucket -> batch size -> batches run (a batch never mixes lengths)
            **({"batches_by_length": {
                str(n): {str(b): c for (m, b), c in sorted(by_length.items()) if m == n}
                for n in sorted({m for m, _ in by_length})}}
               if self.qsl.padded_lengths is not None else {}),
            "devices": f"{jax.device_count()}x{jax.devices()[0].platform}",
            # XLA compiles while LoadGen ran (must be 0: every bucket is compiled before).
            "compiles_during_test": compiles.count,
        }
        summary["wall_s"] = round(wall_s, 3)
        summary["outdir"] = str(outdir)
        summary["label"] = labels.result_label(summary)
        if not summary["mlperf_result"]:
            labels.mark_loadgen_summary(outdir, summary["label"])
        (outdir / SUMMARY).write_text(json.dumps(summary, indent=2, default=str) + "\n")
        return summary

    def accuracy(self, outdir: pathlib.Path) -> dict[str, Any]:
        """Decode LoadGen's accuracy log, compute the metric and the 99% check."""
        samples = self.qsl.samples
        variable = samples.row_splits is not None  # a response is the sample's rows
        shape = (-1, *self.response.shape) if variable else self.response.shape
        rows = logs.read_accuracy_log(outdir, np.dtype(self.response.dtype), shape)
        labels = samples.labels
        missing = sorted(set(range(samples.count)) - set(rows))
        if missing:
            raise RuntimeError(f"{len(missing)} samples missing from the accuracy log "
                               f"(first: {missing[:5]})")
        join = np.concatenate if variable else np.stack
        outputs = join([rows[i] for i in range(samples.count)])
        quality = float(self.spec.accuracy(outputs, labels))
        out: dict[str, Any] = {
            "quality_metric": self.spec.quality_metric,
            "accuracy": quality,
            "accuracy_samples": len(rows),
            "v07_quality_target": self.spec.quality_target or None,
        }
        if self.spec.measure_reference is not None:
            reference = float(self.spec.measure_reference(self.params, self.model_state))
            target = self.spec.quality_fraction * reference
            out.update(reference_accuracy=reference, accuracy_target=target,
                       accuracy_met=quality >= target)
        elif self.spec.quality_target:
            out.update(accuracy_target=self.spec.quality_target,
                       accuracy_met=quality >= self.spec.quality_target)
        out["validity"] = "VALID" if out.get("accuracy_met", True) else "INVALID"
        return out


def server_search(
    engine: Engine,
    settings: RunSettings,
    outdir: str | os.PathLike,
    tries: int = 6,
    start_qps: float | None = None,
) -> dict[str, Any]:
    """The highest Server target QPS whose run is VALID, by a bounded search of `tries` runs.

    Doubles (or halves) from `start_qps` until it brackets the VALID/INVALID boundary, then
    bisects. Every try is a full Server run in `outdir/server_search/try_<i>`; the returned
    summary is the best VALID try's, with the list of all tries under "search".
    """
    outdir = pathlib.Path(outdir)
    if (outdir / SUMMARY).exists():
        raise UsageError(f"{outdir / SUMMARY} exists; results are never overwritten.")
    qps = float(start_qps or settings.expected_qps)
    lo: dict[str, Any] | None = None  # best VALID try
    hi: float | None = None  # lowest INVALID qps
    history = []
    summary: dict[str, Any] = {}
    for i in range(tries):
        s = dataclasses.replace(settings, expected_qps=round(qps, 3))
        summary = engine.run(s, outdir / "server_search" / f"try_{i}")
        valid = summary["validity"] == "VALID"
        history.append({
            "try": i, "target_qps": s.expected_qps, "validity": summary["validity"],
            "scheduled_samples_per_s": summary.get("scheduled_samples_per_s"),
            "p99_latency_ms": summary.get("p99_latency_ms"),
            "invalid_reasons": summary.get("invalid_reasons", []),
        })
        if valid and (lo is None or s.expected_qps > lo["settings"]["expected_qps"]):
            lo = summary
        elif not valid:
            hi = qps if hi is None else min(hi, qps)
        lo_qps = lo["settings"]["expected_qps"] if lo else None
        if lo_qps is None:
            qps = qps / 2
        elif hi is None:
            qps = qps * 2
        else:
            qps = (lo_qps + hi) / 2
    if lo:
        best = dict(lo)
    else:  # keep what the result is (its label) from the last try
        best = {k: summary[k] for k in ("mlperf_result", "benchmark", "modelled_on",
                                        "not_mlperf_reasons", "label", "profile", "mode")
                if k in summary}
        best.update(validity="INVALID", scenario="Server", invalid_reasons=["no try was VALID"])
    best["search"] = history
    best["search_best_qps"] = lo["settings"]["expected_qps"] if lo else None
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / SUMMARY).write_text(json.dumps(best, indent=2, default=str) + "\n")
    return best
