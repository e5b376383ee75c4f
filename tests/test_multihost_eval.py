"""Per-example eval outputs (DLRM's scores and labels, from which the AUC is computed) are
gathered from every process: a 2-process DLRM smoke eval (one CPU device each, `tpubench launch
local`) hands `eval_finalize` exactly the eval_samples rows, in order, that the 1-process run
with 2 devices sees, on both processes, and so gives the same AUC.

Cost: two runs of the DLRM smoke (2 train steps, 3 eval batches), compile dominated; measured
100 s on 2 CPU cores shared with other jobs (load average ~23); slow."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from tpubench.launch.local import free_port

EVAL_SAMPLES = 90  # 2 full global batches of 32 and one of 26: there p0 has 16 real rows, p1 10


def _write_days(directory, rows: dict[int, int]) -> None:
    """Random Criteo TSV days (label, 13 dense, 26 hashed categorical; some fields empty)."""
    rng = np.random.default_rng(0)
    for day in range(24):
        lines = []
        for _ in range(rows.get(day, 0)):
            dense = ["" if rng.random() < 0.2 else str(rng.integers(-1, 500)) for _ in range(13)]
            sparse = ["" if rng.random() < 0.1 else f"{rng.integers(0, 2**32):08x}"
                      for _ in range(26)]
            lines.append("\t".join([str(rng.integers(0, 2)), *dense, *sparse]) + "\n")
        (directory / f"day_{day}").write_text("".join(lines))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    return {**env, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3", **extra}


def _worker(repo_root, workdir, data_dir, processes: int) -> None:
    args = [sys.executable, "tests/scale_worker.py", "dlrm_eval", str(workdir), str(data_dir),
            str(EVAL_SAMPLES)]
    if processes == 1:  # one process, two simulated devices: the same global mesh shape
        env = _env(XLA_FLAGS="--xla_force_host_platform_device_count=2")
    else:
        env = _env()
        args = [sys.executable, "-m", "tpubench.cli", "launch", "local",
                f"--processes={processes}", f"--port={free_port()}", "--", *args]
    proc = subprocess.Popen(args, cwd=repo_root, env={**env, "PYTHONFAULTHANDLER": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=900)  # 2 shared cores: slow
    except subprocess.TimeoutExpired:  # show where it hangs: faulthandler dumps every thread
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate()
    assert proc.returncode == 0, out[-3000:] + err[-6000:]


@pytest.mark.slow
def test_two_processes_gather_every_eval_example_like_one_process(repo_root, tmp_path):
    """Bites: `JitEngine.eval_to_host` keeping only this process's rows (the addressable shards)
    instead of the all-gather compiled before run_start hands each process 48 of the 96 padded
    rows (48 real on p0, 42 on p1): fails at `rows` (48 != 96)."""
    data_dir = tmp_path / "criteo"
    data_dir.mkdir()
    _write_days(data_dir, {0: 96, 23: EVAL_SAMPLES + 10})  # day 23 has rows beyond eval_samples
    _worker(repo_root, tmp_path / "one", data_dir, processes=1)
    _worker(repo_root, tmp_path / "two", data_dir, processes=2)

    one = dict(np.load(tmp_path / "one" / "eval_p0.npz"))
    assert one["label"].shape == one["score"].shape == (EVAL_SAMPLES,)
    assert 0.0 < one["label"].mean() < 1.0 and np.unique(one["score"]).size == EVAL_SAMPLES
    for p in (0, 1):
        two = dict(np.load(tmp_path / "two" / f"eval_p{p}.npz"))
        assert int(two["rows"]) == int(one["rows"]) == 3 * 32  # 6 padding rows, masked out
        np.testing.assert_array_equal(two["label"], one["label"])
        np.testing.assert_allclose(two["score"], one["score"], rtol=1e-6, atol=0)
        assert float(two["quality"]) == pytest.approx(float(one["quality"]), abs=1e-9)
