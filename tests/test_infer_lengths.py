"""Length buckets in the LoadGen harness (`InferenceSpec.length_buckets`, `Samples.lengths`):
each sample is served at the smallest bucket that holds it, a batch never mixes lengths, every
response equals the one-bucket run's, and nothing compiles while LoadGen runs. A tiny
length-masked function stands in for a model (RNN-T's own check: tests/test_rnnt.py)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from tpubench.errors import UsageError
from tpubench.infer import logs
from tpubench.infer.qsl import padded_lengths
from tpubench.infer.runner import Engine
from tpubench.infer.settings import Mode, Scenario
from tpubench.infer.spec import InferenceSpec, Samples

N_SAMPLES, MAX_LEN, FEATURES = 60, 32, 3
BUCKETS = (8, 16, 32)


def _samples() -> Samples:
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 17, size=N_SAMPLES).astype(np.int32)  # nobody needs 32
    x = rng.normal(size=(N_SAMPLES, MAX_LEN, FEATURES)).astype(np.float32)
    x[np.arange(MAX_LEN)[None, :] >= lengths[:, None]] = 0.0  # zero padding, as RNN-T's
    return Samples({"x": x, "lens": lengths}, np.zeros(N_SAMPLES, np.int32), lengths=lengths,
                   length_inputs=("x",))


def _apply(params, state, inputs):
    """[masked sum of position-weighted features (every valid frame counts, in order), the
    length the batch was served at]: the second column says which bucket ran the sample."""
    x, lens = inputs["x"], inputs["lens"]
    pos = jnp.arange(x.shape[1], dtype=jnp.float32)
    valid = pos[None, :] < lens[:, None]
    total = jnp.sum(jnp.where(valid[..., None], x * (pos[None, :, None] + 1.0), 0.0), (1, 2))
    return jnp.stack([total, jnp.full_like(total, x.shape[1])], axis=1)


def _spec(buckets: tuple[int, ...]) -> InferenceSpec:
    return InferenceSpec(mlperf_name="tiny-lengths", load_samples=_samples, apply=_apply,
                         accuracy=lambda out, lab: 1.0, server_latency_bound_ms=50.0,
                         length_buckets=buckets)


@pytest.fixture(scope="module")
def engines() -> dict[str, Engine]:
    return {"bucketed": Engine.prepare(_spec(BUCKETS), {}, {}, (1, 4, 16)),
            "single": Engine.prepare(_spec(()), {}, {}, (1, 4, 16))}


def _responses(summary, engine) -> dict[int, np.ndarray]:
    return logs.read_accuracy_log(summary["outdir"], np.dtype(engine.response.dtype),
                                  engine.response.shape)


def test_each_sample_gets_the_smallest_bucket_that_holds_it():
    """Bites: searchsorted with side="right" (a sample of exactly 8 frames went to 16)."""
    samples = Samples({"x": np.zeros((5, 32, 1))}, np.zeros(5), lengths=np.array([1, 8, 9, 16,
                      32]), length_inputs=("x",))
    assert padded_lengths(samples, (16, 8, 32)).tolist() == [8, 8, 16, 16, 32]
    assert padded_lengths(samples, ()) is None


def test_a_sample_longer_than_every_bucket_or_a_bucket_past_the_inputs_is_a_usage_error():
    """Bites: dropping the longest-sample check (the sample was then served cut short)."""
    samples = Samples({"x": np.zeros((2, 32, 1))}, np.zeros(2), lengths=np.array([5, 20]),
                      length_inputs=("x",))
    with pytest.raises(UsageError, match="add a bucket >= 20"):
        padded_lengths(samples, (8, 16))
    with pytest.raises(UsageError, match="length buckets <= 32"):
        padded_lengths(samples, (16, 64))


def test_offline_serves_each_sample_at_its_bucket_and_answers_as_one_bucket(engines, tmp_path):
    """Accuracy mode, every response: the masked sum equals the one-bucket run's bit for bit,
    and the length it ran at is its own bucket (so no batch mixed lengths); only the used
    lengths were compiled; the padded positions are reported; nothing compiled during the run.

    Bites (each tried once, each failed here): the SUT running every batch at the longest
    length (`buckets[size].executable`): served length 16 where 8 was due; `gather` zeroing the
    last position of the bucket: masked sums differ (47.92 vs 71.48); every sample queued in
    one queue, so batches mix lengths: served lengths wrong; `padded_lengths` with
    side="right": served length 32 for a 16-frame sample; compiling only the longest length:
    fails too."""
    bucketed, single = engines["bucketed"], engines["single"]
    settings = bucketed.default_settings(Scenario.OFFLINE, Mode.ACCURACY, "quick")
    got = bucketed.run(settings, tmp_path / "bucketed")
    want = single.run(single.default_settings(Scenario.OFFLINE, Mode.ACCURACY, "quick"),
                      tmp_path / "single")
    rows, ref = _responses(got, bucketed), _responses(want, single)
    lengths = bucketed.qsl.samples.lengths
    due = np.asarray(BUCKETS)[np.searchsorted(BUCKETS, lengths)]
    assert sorted(rows) == sorted(ref) == list(range(N_SAMPLES))
    for i in range(N_SAMPLES):
        assert rows[i][0] == ref[i][0], i
        assert rows[i][1] == due[i] and ref[i][1] == MAX_LEN, (i, rows[i], lengths[i])
    assert got["length_buckets"]["compiled"] == [8, 16]  # nobody needs 32
    assert got["length_buckets"]["padded_positions"] == {
        "bucketed": int(due.sum()), "unbucketed": MAX_LEN * N_SAMPLES,
        "valid": int(lengths.sum())}
    runs = got["sut"]["batches_by_length"]
    assert set(runs) == {"8", "16"} and "batches_by_length" not in want["sut"]
    assert got["sut"]["compiles_during_test"] == 0


@pytest.mark.parametrize("scenario", [Scenario.SERVER, Scenario.SINGLE_STREAM])
def test_nothing_compiles_while_loadgen_runs_with_length_buckets(engines, scenario, tmp_path):
    """Server (dynamic batches of one length each) and SingleStream: 0 compiles (validity is
    not asserted: a loaded host can miss the latency bound).

    Bites: compiling only the longest length (`lengths_used()[-1:]`): the SUT then had no
    executable for length 8 and the run raised instead of completing (both scenarios);
    `padded_lengths` with side="right": batches ran at length 32."""
    engine = engines["bucketed"]
    qps = 200.0 if scenario is Scenario.SERVER else 0.0
    summary = engine.run(engine.default_settings(scenario, Mode.PERFORMANCE, "quick", qps),
                         tmp_path / "run")
    assert summary["sut"]["compiles_during_test"] == 0
    assert set(summary["sut"]["batches_by_length"]) <= {"8", "16"}
