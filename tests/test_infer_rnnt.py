"""RNN-T served in frame buckets (`data.frame_buckets`): every response of a bucketed accuracy
run equals the one-bucket run's, nothing compiles while LoadGen runs, and bad buckets are a
UsageError before any compute. (The harness's own length-bucket tests: test_infer_lengths.py;
the trained mini under LoadGen: test_rnnt_mini.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.infer import cli, logs
from tpubench.infer.runner import Engine
from tpubench.infer.settings import Mode, Scenario
from tpubench.infer.spec import inference_spec
from workloads.rnnt.inference import frame_buckets


def _responses(engine: Engine, outdir) -> tuple[dict, dict[int, np.ndarray]]:
    summary = engine.run(engine.default_settings(Scenario.OFFLINE, Mode.ACCURACY, "quick"),
                         outdir)
    rows = logs.read_accuracy_log(outdir, np.dtype(engine.response.dtype), engine.response.shape)
    return summary, rows


def test_bucketed_responses_equal_the_single_bucket_run_on_fsdd(shared_data_dir, tmp_path):
    """The smoke model (random init) on 24 FSDD eval utterances (16-74 frames), one symbol per
    frame at most so that a transcript reflects every encoder frame: served in the frame
    buckets and in one bucket of 100, every logged response is identical; 0 compiles during
    the run; the padded frames are the buckets'.

    Bites: the greedy decoder decoding every padded frame (`active = t >= 0` instead of
    `t < enc_lens` in decode.py): responses differed between the two runs."""
    cfg = config_lib.load("rnnt", "smoke", {
        "data.source": "fsdd", "data.dir": str(shared_data_dir), "eval.samples": 24,
        "eval.batch_size": 8, "model.max_symbols_per_step": 1, "model.max_output_len": 64})
    workload = registry.create(cfg)
    spec = inference_spec(workload)
    assert spec.length_buckets == (20, 40, 60, 80, 100)
    params, state, _ = cli._variables(workload, None)
    bucketed = Engine.prepare(spec, params, state, (8,))
    single = Engine.prepare(spec, params, state, (8,), length_buckets=(100,))
    got, rows = _responses(bucketed, tmp_path / "bucketed")
    want, ref = _responses(single, tmp_path / "single")
    assert sorted(rows) == sorted(ref) == list(range(24))
    for i in range(24):
        np.testing.assert_array_equal(rows[i], ref[i], err_msg=f"sample {i}")
    # the transcripts say something: not all alike, none filling the buffer
    assert len({r.tobytes() for r in rows.values()}) >= 12
    assert all((r == -1).any() for r in rows.values())
    lengths = bucketed.qsl.samples.lengths
    due = np.asarray(spec.length_buckets)[np.searchsorted(spec.length_buckets, lengths)]
    assert got["length_buckets"]["padded_positions"] == {
        "bucketed": int(due.sum()), "unbucketed": 100 * 24, "valid": int(lengths.sum())}
    assert set(got["sut"]["batches_by_length"]) == {str(n) for n in np.unique(due)}
    assert got["sut"]["compiles_during_test"] == want["sut"]["compiles_during_test"] == 0


@pytest.mark.parametrize("buckets", [(20, 50), (40, 20, 100), (0, 100)])
def test_bad_frame_buckets_are_a_usage_error_before_any_compute(buckets, tmp_path):
    """Not ending at max_frames, not ascending, or < 1: exit 2 with the fix, nothing written.

    Bites: dropping the `buckets[-1] != max_frames` check ((20, 50) was accepted)."""
    cfg = config_lib.load("rnnt", "smoke", {"data.frame_buckets": buckets})
    with pytest.raises(UsageError, match="data.frame_buckets='\\(50, 100\\)'"):
        frame_buckets(cfg)
    workdir = tmp_path / "out"
    rc = cli.main(["rnnt", "--config=smoke", "--scenario=Offline", f"--workdir={workdir}",
                   f"--config.data.frame_buckets={buckets}"])
    assert rc == 2 and not workdir.exists()
