"""Issue 17.3: the input-pipeline benchmark's figures (tpubench/platform/input_rate.py,
benchmarks/input_pipeline.py). No timed test: the clock is injected or the rate is only
compared with the needed rate computed from the same figures."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tpubench.platform import input_rate


def _batches(size, pulled):
    step = 0
    while True:
        pulled.append(step)
        yield {"inputs": np.zeros((size, 4, 4, 3), np.uint8), "label": np.zeros(size, np.int32)}
        step += 1


def test_host_rate_times_only_the_batches_after_the_warmup():
    """A fake clock that reads 2 s per batch pulled so far: 2 warm-up batches, then 5 timed
    ones -> 10 s, 5 x 8 examples -> 4 examples/s; bytes per example are the uint8 pixels plus
    the int32 label. Bites (tried): starting the clock before the warm-up (14 s), counting the
    warm-up batches as timed."""
    pulled = []
    rate = input_rate.host_rate(_batches(8, pulled), timed=5, warmup=2,
                                clock=lambda: 2.0 * len(pulled))
    assert len(pulled) == 7
    assert (rate.batches, rate.batch_size, rate.seconds) == (5, 8, 10.0)
    assert rate.examples_per_s == 4.0
    assert rate.bytes_per_example == 4 * 4 * 3 + 4
    assert rate.bytes_per_s == 4.0 * 52


def test_needed_rate_is_the_global_batch_over_the_roofline_step_and_the_hosts():
    """2,048 examples per 0.5 s step over 4 hosts -> 1,024 examples/s per host; a host doing
    512 has headroom 0.5. Bites: forgetting the hosts, or multiplying by the step time."""
    report = {"global_batch_size": 2048, "roofline_step_s": 0.5}
    assert input_rate.needed_rate(report, 4) == 1024.0
    assert input_rate.headroom(input_rate.HostRate(4, 128, 1.0, 1.0), 1024.0) == 0.5
    assert input_rate.needed_rate({"global_batch_size": 8, "roofline_step_s": 0.0}, 1) \
        == float("inf")
    with pytest.raises(ValueError, match="num_hosts"):
        input_rate.needed_rate(report, 0)


def test_batch_arrays_that_disagree_on_the_batch_size_are_an_error():
    with pytest.raises(ValueError, match="disagree"):
        input_rate.batch_size_of({"a": np.zeros(3), "b": np.zeros(4)})


def test_the_script_measures_the_real_mini_pipeline_against_a_fit_report(
        tmp_path, repo_root, shared_data_dir):
    """benchmarks/input_pipeline.py on the ResNet mini's MNIST-5k pipeline with a made fit
    report: the headroom it prints is its own host rate over global batch / step / hosts."""
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"global_batch_size": 4096, "roofline_step_s": 0.002}))
    out = subprocess.run(
        [sys.executable, "benchmarks/input_pipeline.py", "resnet:mini", "--json",
         "--topology=v4:2x2x2", f"--fit_json=resnet:mini={fit}", "--batches=3",
         "--host_batch=16"],
        cwd=repo_root, env={**os.environ, "PYTHONPATH": str(repo_root)},
        capture_output=True, text=True, check=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert row["hosts"] == 2 and row["host_batch"] == 16
    assert row["needed_per_host"] == pytest.approx(4096 / 0.002 / 2)
    assert row["headroom"] == pytest.approx(row["examples_per_s"] / row["needed_per_host"])
    assert row["bytes_per_example"] > 0 and row["examples_per_s"] > 0
