"""The LoadGen machinery (QSL, batching SUT, settings, log parsing, Server search), driven by
the real LoadGen over a tiny Flax model whose reference accuracy is exactly 0.9."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import mlperf_loadgen as lg
import numpy as np
import pytest
from flax import linen as nn

from tpubench.errors import UsageError
from tpubench.infer import logs
from tpubench.infer.runner import Engine, server_search
from tpubench.infer.settings import Mode, RunSettings, Scenario, check_no_audit_config
from tpubench.infer.spec import InferenceSpec, Samples
from tpubench.infer.sut import Bucket, server_batching

N_SAMPLES = 200


class _MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(10)(nn.relu(nn.Dense(32)(x)))


def _tiny_spec() -> tuple[InferenceSpec, dict]:
    """A model and labels such that exactly 90% of the predictions are right."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N_SAMPLES, 16)).astype(np.float32)
    model = _MLP()
    params = model.init(jax.random.key(0), x[:1])["params"]
    labels = np.asarray(jnp.argmax(model.apply({"params": params}, x), -1)).astype(np.int32)
    labels[: N_SAMPLES // 10] = (labels[: N_SAMPLES // 10] + 1) % 10

    def apply(p, state, inputs):
        return jnp.argmax(model.apply({"params": p, **state}, inputs), -1).astype(jnp.int32)

    def accuracy(outputs, lab):
        return float(np.mean(outputs == lab))

    spec = InferenceSpec(
        mlperf_name="tiny", load_samples=lambda: Samples(x, labels), apply=apply,
        accuracy=accuracy, server_latency_bound_ms=15.0, multistream_latency_bound_ms=200.0,
        measure_reference=lambda p, s: accuracy(np.asarray(apply(p, s, x)), labels),
    )
    return spec, params


@pytest.fixture(scope="module")
def engine() -> Engine:
    spec, params = _tiny_spec()
    return Engine.prepare(spec, params, {}, batch_sizes=(1, 8, 32))


@pytest.mark.parametrize("scenario", [Scenario.OFFLINE, Scenario.SINGLE_STREAM,
                                      Scenario.MULTI_STREAM])
def test_quick_profile_run_is_valid_with_a_throughput(engine, scenario, tmp_path):
    settings = engine.default_settings(scenario, Mode.PERFORMANCE, "quick")
    summary = engine.run(settings, tmp_path)
    assert summary["validity"] == "VALID", summary["invalid_reasons"]
    assert summary["invalid_reasons"] == []
    assert summary["samples_per_s"] > 100
    assert 0 < summary["p50_latency_ms"] <= summary["p90_latency_ms"] <= summary["p99_latency_ms"]
    assert summary["scenario"] == scenario.value
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["validity"] == "VALID"
    assert (tmp_path / "mlperf_log_detail.txt").exists()


def test_multistream_reports_the_v07_bound_and_issues_full_queries(engine, tmp_path):
    settings = engine.default_settings(Scenario.MULTI_STREAM, Mode.PERFORMANCE, "quick")
    summary = engine.run(settings, tmp_path)
    assert summary["samples_per_query"] == 8
    assert summary["sut"]["batches_run"] == {"8": summary["query_count"]}
    assert summary["v07_multistream_bound_ms"] == 200.0
    assert summary["v07_multistream_bound_met"] is True


def test_server_at_a_modest_qps_is_valid_and_batches_dynamically(engine, tmp_path):
    settings = engine.default_settings(Scenario.SERVER, Mode.PERFORMANCE, "quick", 400.0)
    summary = engine.run(settings, tmp_path)
    assert summary["validity"] == "VALID", summary["invalid_reasons"]
    assert summary["target_qps"] == 400
    assert summary["latency_bound_ms"] == 15.0
    assert summary["p99_latency_ms"] < 15.0
    assert 300 < summary["scheduled_samples_per_s"] < 500
    assert summary["query_count"] >= 500


def test_offline_expected_qps_too_low_is_invalid_with_loadgens_reason(engine, tmp_path):
    settings = engine.default_settings(Scenario.OFFLINE, Mode.PERFORMANCE, "quick", 5.0)
    summary = engine.run(settings, tmp_path)
    assert summary["validity"] == "INVALID"
    assert summary["min_duration_met"] is False
    assert any("Increase expected QPS" in r for r in summary["invalid_reasons"])


def test_server_latency_bound_too_tight_is_invalid_with_loadgens_reason(engine, tmp_path):
    settings = dataclasses.replace(
        engine.default_settings(Scenario.SERVER, Mode.PERFORMANCE, "quick", 400.0),
        latency_bound_ms=0.001,
    )
    summary = engine.run(settings, tmp_path)
    assert summary["validity"] == "INVALID"
    assert summary["perf_constraints_met"] is False
    assert any("Reduce target QPS" in r for r in summary["invalid_reasons"])


def test_accuracy_mode_decodes_the_log_and_matches_the_reference(engine, tmp_path):
    settings = engine.default_settings(Scenario.OFFLINE, Mode.ACCURACY, "quick")
    summary = engine.run(settings, tmp_path)
    assert summary["accuracy_samples"] == N_SAMPLES
    assert summary["accuracy"] == pytest.approx(0.9)
    assert summary["reference_accuracy"] == pytest.approx(0.9)
    assert summary["accuracy_target"] == pytest.approx(0.891)
    assert summary["accuracy_met"] is True and summary["validity"] == "VALID"
    rows = logs.read_accuracy_log(tmp_path, np.dtype(np.int32), ())
    assert sorted(rows) == list(range(N_SAMPLES))


def test_server_search_reports_each_try_and_keeps_the_best_valid(engine, tmp_path):
    settings = engine.default_settings(Scenario.SERVER, Mode.PERFORMANCE, "quick", 300.0)
    best = server_search(engine, settings, tmp_path, tries=2)
    assert [t["target_qps"] for t in best["search"]] == [300.0, 600.0]
    valid = [t["target_qps"] for t in best["search"] if t["validity"] == "VALID"]
    assert valid and best["search_best_qps"] == max(valid)
    assert best["validity"] == "VALID"
    assert json.loads((tmp_path / "summary.json").read_text())["search_best_qps"] == max(valid)


def test_results_are_never_overwritten(engine, tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    settings = engine.default_settings(Scenario.OFFLINE, Mode.PERFORMANCE, "quick")
    with pytest.raises(UsageError, match="never overwritten"):
        engine.run(settings, tmp_path)


def test_a_stray_audit_config_is_refused(tmp_path):
    (tmp_path / "audit.config").write_text("*.*.min_query_count = 1\n")
    with pytest.raises(UsageError, match="audit.config"):
        check_no_audit_config(tmp_path)
    check_no_audit_config(tmp_path / "..")  # no file there: fine


def test_v07_profile_sets_the_2020_durations_and_counts():
    def ts(scenario):
        return RunSettings(scenario, Mode.PERFORMANCE, "v0.7", expected_qps=100.0,
                           latency_bound_ms=15.0).to_loadgen()

    server = ts(Scenario.SERVER)
    assert server.min_duration_ms == 60_000
    assert server.min_query_count == 270_336
    assert server.server_target_latency_ns == 15_000_000
    assert server.server_target_latency_percentile == 0.99
    assert ts(Scenario.SINGLE_STREAM).min_query_count == 1_024
    assert ts(Scenario.MULTI_STREAM).min_query_count == 270_336
    offline = ts(Scenario.OFFLINE)
    # >= 24,576 samples in the one Offline query: expected QPS floored at 24576 / 60 s.
    assert offline.offline_expected_qps == pytest.approx(24_576 / 60)
    assert offline.qsl_rng_seed == 7322528924094909334
    assert offline.mode == lg.TestMode.PerformanceOnly


def test_scenario_names_parse_and_unknown_ones_are_usage_errors():
    assert Scenario.parse("offline") is Scenario.OFFLINE
    assert Scenario.parse("single_stream") is Scenario.SINGLE_STREAM
    with pytest.raises(UsageError, match="Scenarios: Offline, Server"):
        Scenario.parse("Batch")


def test_server_batching_fits_the_latency_bound():
    buckets = {b: Bucket(b, None, t) for b, t in ((1, 0.001), (8, 0.002), (32, 0.004))}
    max_batch, max_wait_s = server_batching(buckets, latency_bound_ms=15.0)
    assert max_batch == 8  # 2 * 4 ms > 15 ms / 3
    assert max_wait_s == pytest.approx(0.0035)  # min(7.5 - 4, 3.75) ms
    assert server_batching(buckets, latency_bound_ms=1.0)[0] == 1


def test_a_failing_batch_ends_the_run_with_the_error_instead_of_hanging(engine, tmp_path):
    def broken(*args):
        raise ValueError("device lost")

    failing = dataclasses.replace(
        engine, buckets={b: Bucket(b, broken, k.latency_s) for b, k in engine.buckets.items()}
    )
    settings = engine.default_settings(Scenario.OFFLINE, Mode.PERFORMANCE, "quick")
    with pytest.raises(RuntimeError, match="device lost"):
        failing.run(settings, tmp_path)
