"""The LoadGen machinery (QSL, batching SUT, settings, log parsing, Server search), driven by
the real LoadGen over a tiny Flax model whose reference accuracy is exactly 0.9."""

from __future__ import annotations

import dataclasses
import json
import time

import jax
import jax.numpy as jnp
import mlperf_loadgen as lg
import numpy as np
import pytest
from flax import linen as nn

from tpubench.errors import UsageError
from tpubench.infer import cli, labels, logs
from tpubench.infer.runner import Engine, server_search
from tpubench.infer.settings import PROFILES, Mode, RunSettings, Scenario, check_no_audit_config
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


def test_accuracy_mode_every_response_equals_the_direct_prediction(engine, tmp_path):
    """Each logged response (computed in a LoadGen batch of whatever size, padded) equals the
    prediction of the same sample alone (batch 1, plain jit).
    Bites: the SUT answering row k of the batch for the k+1-th sample (an off-by-one in
    `_complete_loop`'s pointers) -> 180 of 200 responses differ."""
    settings = engine.default_settings(Scenario.OFFLINE, Mode.ACCURACY, "quick")
    engine.run(settings, tmp_path, max_batch=32)
    rows = logs.read_accuracy_log(tmp_path, np.dtype(np.int32), ())
    x = engine.qsl.samples.inputs
    one = jax.jit(engine.spec.apply)
    direct = np.array([int(one(engine.params, {}, x[i:i + 1])[0]) for i in range(N_SAMPLES)])
    assert np.array_equal(np.array([int(rows[i]) for i in range(N_SAMPLES)]), direct)


def _loadgen_result(directory) -> str:
    """'VALID' / 'INVALID' as LoadGen wrote it in its own mlperf_log_summary.txt."""
    for line in (directory / "mlperf_log_summary.txt").read_text().splitlines():
        if line.startswith("Result is :"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no 'Result is' line in {directory}")


def test_server_search_halves_then_bisects_and_brackets_loadgens_verdicts(engine, tmp_path):
    """A SUT with a 3 ms sleep per batch of 1 (capacity < 333 QPS) searched from 800 QPS with a
    500 ms bound (loose, for a loaded host; measured: 800 I, 400 I, 200 V, 300 I, 250 V at load
    average ~18, and 800 I, 400 I, 200 I, 100 I, 50 V at ~22 with a 100 ms bound):
    the search halves while LoadGen says INVALID, then bisects between the best VALID and the
    lowest INVALID target; the answer is the best VALID try and lies below every INVALID one.
    Bites: bisection replaced by doubling from the best VALID (`qps = lo_qps * 2`) -> the try
    after the first VALID is not between it and the lowest INVALID."""
    exe = engine.buckets[1].executable

    def slow(params, state, batch):
        time.sleep(0.003)
        return exe(params, state, batch)

    slow_engine = dataclasses.replace(engine, buckets={1: Bucket(1, slow, 0.003, 0.003)})
    settings = dataclasses.replace(
        slow_engine.default_settings(Scenario.SERVER, Mode.PERFORMANCE, "quick", 800.0),
        latency_bound_ms=500.0,
    )
    best = server_search(slow_engine, settings, tmp_path, tries=6)
    tries = best["search"]
    targets = [t["target_qps"] for t in tries]
    verdicts = [t["validity"] for t in tries]
    for i, t in enumerate(tries):  # the search read LoadGen's verdict of each try
        assert _loadgen_result(tmp_path / "server_search" / f"try_{i}") == t["validity"]
    assert verdicts[0] == "INVALID"
    first_valid = verdicts.index("VALID")  # halving reached a VALID target
    assert targets[:first_valid + 1] == [800.0 / 2**i for i in range(first_valid + 1)]
    assert first_valid < len(tries) - 1, "no bisection step left"
    for i in range(first_valid + 1, len(tries)):  # every later try bisects the bracket so far
        lo = max(q for q, v in zip(targets[:i], verdicts[:i], strict=True) if v == "VALID")
        hi = min(q for q, v in zip(targets[:i], verdicts[:i], strict=True) if v == "INVALID")
        assert targets[i] == pytest.approx((lo + hi) / 2, abs=1e-3)
    valid = [q for q, v in zip(targets, verdicts, strict=True) if v == "VALID"]
    invalid = [q for q, v in zip(targets, verdicts, strict=True) if v == "INVALID"]
    assert best["search_best_qps"] == max(valid) < min(invalid)
    assert best["validity"] == "VALID" and best["target_qps"] == max(valid)


def test_offline_uses_the_bucket_with_the_best_measured_throughput(engine, tmp_path):
    """With measured latencies where the middle bucket has the best samples/s, Offline runs
    every batch in it; on the real warm-up timings it picks the argmax of b / t(b).
    Bites: `best_offline_batch` returning the largest bucket -> Offline runs 32-batches."""
    exe = {b: k.executable for b, k in engine.buckets.items()}
    forged = dataclasses.replace(engine, buckets={
        1: Bucket(1, exe[1], 0.001, 0.001),     # 1,000 samples/s
        8: Bucket(8, exe[8], 0.002, 0.002),     # 4,000 samples/s: the best
        32: Bucket(32, exe[32], 0.020, 0.020),  # 1,600 samples/s
    })
    assert forged.best_offline_batch() == 8
    summary = forged.run(forged.default_settings(Scenario.OFFLINE, Mode.PERFORMANCE, "quick"),
                         tmp_path)
    assert summary["sut"]["max_batch"] == 8
    assert set(summary["sut"]["batches_run"]) == {"8"}
    assert summary["settings"]["expected_qps"] == pytest.approx(2 * 4000.0)
    measured = {b: b / k.best_latency_s for b, k in engine.buckets.items()}
    assert engine.batching(engine.default_settings(
        Scenario.OFFLINE, Mode.PERFORMANCE, "quick"))[0] == max(measured, key=measured.get)


@pytest.mark.parametrize("scenario", list(Scenario))
def test_nothing_compiles_while_loadgen_runs(engine, scenario, tmp_path):
    """jax.monitoring counts backend compiles during the LoadGen test: none in any scenario;
    a SUT whose buckets are plain `jax.jit` functions (compiled at first call) counts them.
    Bites: the control itself (jit instead of the AOT executables) shows >= 1 compile."""
    qps = 400.0 if scenario is Scenario.SERVER else 0.0
    settings = engine.default_settings(scenario, Mode.PERFORMANCE, "quick", qps)
    summary = engine.run(settings, tmp_path / "aot")
    assert summary["sut"]["compiles_during_test"] == 0
    jitted = dataclasses.replace(engine, buckets={
        b: Bucket(b, jax.jit(lambda p, s, x: engine.spec.apply(p, s, x) + 0), k.latency_s,
                  k.best_latency_s) for b, k in engine.buckets.items()
    })
    assert jitted.run(settings, tmp_path / "jit")["sut"]["compiles_during_test"] >= 1


def test_server_search_reports_each_try_and_keeps_the_best_valid(engine, tmp_path):
    """The doubling branch: a VALID start doubles (a 200 ms bound keeps 200 QPS VALID on a
    loaded host)."""
    settings = dataclasses.replace(
        engine.default_settings(Scenario.SERVER, Mode.PERFORMANCE, "quick", 200.0),
        latency_bound_ms=200.0,
    )
    best = server_search(engine, settings, tmp_path, tries=2)
    assert best["search"][0]["validity"] == "VALID"
    assert [t["target_qps"] for t in best["search"]] == [200.0, 400.0]
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


# The MLPerf Inference v0.7 seeds as the v0.7 submission checker requires them (mlcommons/inference,
# tools/submission/submission-checker.py, MODEL_CONFIG["v0.7"]["seeds"]; the same numbers are in
# the v0.7 mlperf.conf). Written here from that source, not imported from tpubench.
V07_CHECKER_SEEDS = {"qsl": 12786827339337101903, "sample_index": 12640797754436136668,
                     "schedule": 3135815929913719677}


@pytest.fixture
def short_v07(monkeypatch):
    """The v0.7 profile with its seeds and everything else kept, but 0.3 s runs (a real v0.7
    run takes >= 60 s)."""
    short = dataclasses.replace(
        PROFILES["v0.7"], min_duration_ms={s: 300 for s in Scenario},
        min_query_count={s: 1 for s in Scenario}, offline_min_samples=0,
    )
    monkeypatch.setitem(PROFILES, "v0.7", short)


def test_a_v07_profile_run_uses_the_v07_seeds_as_loadgen_reports_them(engine, short_v07,
                                                                        tmp_path):
    """The seeds LoadGen itself logs (`effective_*_rng_seed` in mlperf_log_detail.txt) after a
    v0.7-profile run are the v0.7 submission checker's.
    Bites: the v1.0 seeds (7322528924094909334, ...) back in the profile -> all three differ."""
    settings = engine.default_settings(Scenario.OFFLINE, Mode.PERFORMANCE, "v0.7")
    summary = engine.run(settings, tmp_path)
    records = logs.read_detail(tmp_path)
    used = {k: records[f"effective_{k}_rng_seed"] for k in V07_CHECKER_SEEDS}
    assert used == V07_CHECKER_SEEDS
    assert summary["loadgen_seeds"] == V07_CHECKER_SEEDS


def _labelled_run(engine, profile, tmp_path):
    settings = engine.default_settings(Scenario.OFFLINE, Mode.PERFORMANCE, profile)
    return engine.run(settings, tmp_path)


def test_a_quick_run_says_it_is_not_an_mlperf_result_everywhere(engine, tmp_path):
    """Quick profile: summary.json, the headline and LoadGen's own summary file all say NOT AN
    MLPERF RESULT, with the reasons; the benchmark name never appears bare.
    Bites: `not_mlperf_reasons` ignoring the profile -> the v0.7-on-the-benchmark case below
    passes but this one loses its 'quick' reason; `mark_loadgen_summary` skipped -> the
    LoadGen file starts with LoadGen's header."""
    summary = _labelled_run(engine, "quick", tmp_path)
    assert summary["validity"] == "VALID"
    assert summary["mlperf_result"] is False
    assert summary["benchmark"] == "tiny (NOT AN MLPERF RESULT)"
    assert any("'quick' profile" in r for r in summary["not_mlperf_reasons"])
    assert any("model and data are not" in r for r in summary["not_mlperf_reasons"])
    assert summary["label"].startswith("NOT AN MLPERF RESULT (")
    line = cli.headline(summary)
    assert line.startswith("NOT AN MLPERF RESULT (")
    assert ": VALID" not in line and "LoadGen VALID (settings met; still NOT AN" in line
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["mlperf_result"] is False and on_disk["label"] == summary["label"]
    loadgen_summary = (tmp_path / "mlperf_log_summary.txt").read_text().splitlines()
    assert loadgen_summary[1] == summary["label"]
    assert any(x.startswith("Result is : VALID") for x in loadgen_summary)  # LoadGen's, kept


LOADGEN_6 = ("LoadGen 6.0.17 @ d6147c7eb7, not the v0.7 release (built from mlcommons/inference's "
             "v0.7 tag, which the v0.7 rules require)")


def test_v07_profile_on_a_mini_model_is_still_not_an_mlperf_result(engine, short_v07, tmp_path):
    """Bites: labelling by profile only -> mlperf_result True here."""
    summary = _labelled_run(engine, "v0.7", tmp_path)
    assert summary["mlperf_result"] is False
    assert summary["not_mlperf_reasons"] == [
        "the '?' config's model and data are not the tiny benchmark's",
        LOADGEN_6.replace("6.0.17 @ d6147c7eb7", summary["loadgen_version"])]
    assert cli.headline(summary).startswith("NOT AN MLPERF RESULT (")


def test_the_benchmarks_model_and_data_under_loadgen_6_are_still_not_a_v07_result(
        engine, short_v07, tmp_path):
    """Issue 35: the v0.7 profile on the benchmark's own model and data, under the LoadGen
    installed (6.x: the only engine today), is labelled NOT AN MLPERF RESULT for that reason
    alone (the v0.7 rules require the round's LoadGen; the r0.7 submission checker cannot read
    LoadGen 6's SingleStream and MultiStream summaries). Bites: the old label, which gave this
    run the bare name "tiny"."""
    bench = dataclasses.replace(
        engine, spec=dataclasses.replace(engine.spec, benchmark_model_and_data=True))
    summary = _labelled_run(bench, "v0.7", tmp_path / "v07")
    assert summary["loadgen_version"].startswith("6.")
    assert summary["mlperf_result"] is False
    assert summary["benchmark"] == "tiny (NOT AN MLPERF RESULT)"
    assert summary["not_mlperf_reasons"] == [
        LOADGEN_6.replace("6.0.17 @ d6147c7eb7", summary["loadgen_version"])]
    loadgen_summary = (tmp_path / "v07" / "mlperf_log_summary.txt").read_text().splitlines()
    assert loadgen_summary[1] == summary["label"]


def test_the_bare_name_needs_loadgen_v07_the_benchmark_and_reference_weights():
    """The label rules case by case (labels.not_mlperf_reasons): only the v0.7 profile, LoadGen
    built from the v0.7 tag (its log says ".5a1", loadgen/version_generator.py), the benchmark's
    own model and data and weights not trained here (a closed result serves MLPerf's) give the
    bare name; each other case names its reason; the MLPerf Mobile benchmarks never carry an
    MLPerf Inference v0.7 name. Bites: any one condition dropped."""
    def reasons(**kw):
        args = {"profile": "v0.7", "benchmark_model_and_data": True, "config": "full",
                "params_source": "reference:resnet50_v1.onnx", "mlperf_name": "resnet50",
                "loadgen_version": ".5a1 @ 1462709"} | kw
        return labels.not_mlperf_reasons(**args)

    assert reasons() == []
    assert labels.result_label(labels.label_fields("resnet50", [])) == \
        "MLPerf Inference v0.7 resnet50"
    assert reasons(loadgen_version="6.0.17 @ d6147c7eb7") == [
        LOADGEN_6.replace("6.0.17 @ d6147c7eb7", "6.0.17 @ d6147c7eb7")]
    assert reasons(loadgen_version="") == [LOADGEN_6.replace("6.0.17 @ d6147c7eb7",
                                                             "(version not logged)")]
    assert reasons(params_source="checkpoint:/runs/run_0") == [
        "weights trained by tpubench (a closed v0.7 result serves the reference weights MLPerf "
        "provides)"]
    assert reasons(params_source="random_init:seed=0") == [
        "randomly initialised parameters (not a trained model)"]
    for mobile in ("mobilenet-edgetpu", "mobilebert", "ssd-mobilenetv2", "deeplabv3"):
        assert reasons(mlperf_name=mobile) == [
            f"{mobile} is an MLPerf Mobile benchmark, not an MLPerf Inference v0.7 one"]
