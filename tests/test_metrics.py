"""Metrics a person can watch (metrics.jsonl, TensorBoard), the profile, the init progress lines,
and the typed loop state (Compiled, Progress).

One real, short run (the ResNet mini's model on sklearn's digits, as in test_timing.py) with
K = 3 steps per dispatch, evals every 20 steps (dispatches of 3, 3, 3, 3, 3, 3, 2 per block) and
a profile of 4 steps; every dispatch's metrics are captured as the executable returned them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
from jax._src import config as jax_config

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import checkpoint
from tpubench.loops import engine as engine_lib
from tpubench.loops import supervised as train
from tpubench.loops.progress import Progress

SHORT = {"data.source": "digits", "data.dataset": "sklearn_digits", "data.image_size": 8,
         "data.train_samples": 1437, "eval.samples": 360, "eval.batch_size": 120,
         "model.num_filters": 12, "eval.every_samples": 20 * 32, "run.max_train_samples": 40 * 32,
         "eval.target_value": 1.1, "run.steps_per_dispatch": 3, "run.profile_steps": 4,
         "run.progress_every_s": 0.0}
END_STEPS = [3, 6, 9, 12, 15, 18, 20, 23, 26, 29, 32, 35, 38, 40]


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """The run, every dispatch's metrics (device arrays, read after the run), the transfer guard
    in force at each dispatch, and what the run printed."""
    captured, guards = [], []
    real = engine_lib.JitEngine.compile

    def wrap(fn):
        def dispatch(*args):
            guards.append(jax_config.transfer_guard_device_to_host.value)
            state, metrics = fn(*args)
            captured.append(metrics)  # kept on device; read only after the run
            return state, metrics
        return dispatch

    def compile_(self, *args, **kwargs):
        c = real(self, *args, **kwargs)
        time.sleep(2.2)  # a slow compile: the init heartbeat (every 1 s here) must show
        return dataclasses.replace(c, train=wrap(c.train), train_by_size={
            k: wrap(v) for k, v in c.train_by_size.items()})

    mp = pytest.MonkeyPatch()
    mp.setattr(engine_lib.JitEngine, "compile", compile_)
    workdir = tmp_path_factory.mktemp("watched")
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            summary = train.train_and_evaluate(config_lib.load("resnet", "mini", SHORT), workdir)
    finally:
        mp.undo()
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    return {"workdir": workdir, "summary": summary, "records": records, "guards": guards,
            "metrics": jax.device_get(captured), "printed": out.getvalue()}


def test_one_train_record_per_dispatch_with_its_metrics_and_learning_rate(watched):
    """Bites: records written with the block's end step for every dispatch, the loss of the
    wrong dispatch (an off-by-one in the zip), the learning rate of `step` instead of the last
    update's `step - 1`, or dropping the accuracy each fail here."""
    s, records = watched["summary"], watched["records"]
    assert s["status"] == "aborted" and s["steps"] == 40
    assert s["metrics"] == {"jsonl": str(watched["workdir"] / "metrics.jsonl"),
                            "tensorboard": str(watched["workdir"] / "tensorboard")}
    trains = [r for r in records if "train/loss" in r]
    assert [r["step"] for r in trains] == END_STEPS
    assert len(watched["metrics"]) == len(END_STEPS)
    workload = registry.create(config_lib.load("resnet", "mini", SHORT))
    for r, m in zip(trains, watched["metrics"], strict=True):
        assert r["train/loss"] == float(m["loss"]) and r["train/accuracy"] == float(m["accuracy"])
        assert r["train/learning_rate"] == pytest.approx(
            float(workload.learning_rate(r["step"] - 1)), rel=1e-6, abs=1e-9)
    assert len({r["train/learning_rate"] for r in trains}) > 5  # the warm-up schedule moves
    # examples/s: once per block, on its last dispatch's record.
    assert [r["step"] for r in trains if "train/examples_per_s" in r] == [20, 40]
    assert all(r["train/examples_per_s"] > 0 for r in trains if "train/examples_per_s" in r)
    evals = [r for r in records if "eval/top1_accuracy" in r]
    assert [r["step"] for r in evals] == [20, 40]
    assert [r["eval/top1_accuracy"] for r in evals] == [
        h["quality"] for h in s["quality_history"]]
    assert all(r["eval/time_s"] > 0 for r in evals)


def test_tensorboard_files_hold_the_same_scalars(watched):
    """Bites: a TensorBoard writer never flushed/closed (no events read back), or one writing
    another step than the JSONL."""
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(watched["workdir"] / "tensorboard"))
    acc.Reload()
    losses = acc.Scalars("train/loss")
    assert [e.step for e in losses] == END_STEPS
    trains = [r for r in watched["records"] if "train/loss" in r]
    np.testing.assert_allclose([e.value for e in losses], [r["train/loss"] for r in trains],
                               rtol=1e-6)
    assert [e.step for e in acc.Scalars("eval/top1_accuracy")] == [20, 40]


def test_each_record_has_its_dispatchs_own_wall_time(watched):
    """metrics.jsonl and TensorBoard carry the host time each dispatch was seen ready, not the
    time the block's records were written together (a staircase). Bites: dropping the wall
    times on their way to the writers, or taking them all at the block's end."""
    from tensorboard.backend.event_processing import event_accumulator

    records = watched["records"]
    blocks = [[r for r in records if "train/loss" in r and lo < r["step"] <= hi]
              for lo, hi in ((0, 20), (20, 40))]
    for block in blocks:
        walls = [r["wall_time"] for r in block]
        assert all(a < b for a, b in zip(walls[:-1], walls[1:], strict=True)), walls
        # Seven dispatches: the first is seen ready after about 1/7 of the block, the last at
        # its end; records written together would span a few writes' microseconds.
        block_s = 20 * 32 / block[-1]["train/examples_per_s"]
        assert walls[-1] - walls[0] > 0.4 * block_s, (walls, block_s)
    acc = event_accumulator.EventAccumulator(str(watched["workdir"] / "tensorboard"))
    acc.Reload()
    trains = [r for r in records if "train/loss" in r]
    np.testing.assert_allclose([e.wall_time for e in acc.Scalars("train/loss")],
                               [r["wall_time"] for r in trains], rtol=0, atol=1e-6)


def test_progress_lines_show_each_dispatchs_loss_one_dispatch_late(watched):
    """run.progress_every_s=0: a line for every dispatch the loop waited for inside a block (all
    but each block's last, seen ready only at its end), with that dispatch's own loss, the step,
    epoch, examples/s, time on the clock and both ETAs; plain lines (stdout is not a terminal).
    Bites: the loss of the wrong dispatch, a line's step off by one dispatch, a missing figure,
    or bar control characters in a log."""
    pattern = re.compile(
        r"^\[resnet/mini\] step (\d+) epoch ([\d.]+): loss ([\d.]+), ([\d,]+) examples/s, "
        r"(\d+:\d\d) on the clock; next eval in ~(\d+:\d\d), budget in ~(\d+:\d\d)$")
    printed = watched["printed"]
    found = [m for m in map(pattern.match, printed.splitlines()) if m]
    assert [int(m[1]) for m in found] == [3, 6, 9, 12, 15, 18, 23, 26, 29, 32, 35, 38]
    losses = {s: float(m["loss"]) for s, m in zip(END_STEPS, watched["metrics"], strict=True)}
    for m in found:
        step = int(m[1])
        assert m[3] == f"{losses[step]:.4f}" and float(m[2]) == pytest.approx(step * 32 / 1437,
                                                                             abs=0.006)
        assert int(m[4].replace(",", "")) > 0
    assert "\r" not in printed and "\x1b" not in printed
    evals = [line for line in printed.splitlines() if "top1_accuracy" in line]
    assert len(evals) == 2
    for line, step in zip(evals, (20, 40), strict=True):
        assert f"; loss {losses[step]:.4f}, " in line and " examples/s; budget in ~" in line


def test_every_dispatch_runs_under_the_transfer_guard(watched):
    """Bites: reading the previous dispatch's metrics by leaving the guard (the tempting way to
    write them 'one dispatch late') shows up as a dispatch outside 'disallow'."""
    assert watched["guards"] == ["disallow"] * len(END_STEPS)


def test_the_profile_is_written_and_a_profiled_run_is_not_mlperf(watched):
    """Bites: a trace never stopped (no .xplane.pb), or `profile_steps` accepted on an MLPerf
    config without leaving closed division."""
    s = watched["summary"]
    assert s["profile"] == str(watched["workdir"] / "profile")
    traces = list((watched["workdir"] / "profile").rglob("*.xplane.pb"))
    assert traces and traces[0].stat().st_size > 0
    assert s["is_mlperf"] is False
    full = config_lib.load("resnet", "full", {"run.profile_steps": 4})
    assert full.is_mlperf is False and full.submission.division == "open"
    assert any("profile_steps=4" in r and "jax.profiler" in r for r in full.submission.open_reasons)
    assert config_lib.load("resnet", "full").is_mlperf is True


def test_init_says_what_it_is_doing(watched):
    """Bites: dropping the progress lines (a new user waits in silence through the compile)."""
    lines = watched["printed"].splitlines()
    assert lines[0].startswith("[resnet/mini] init: mesh {'data': 1, 'fsdp': 1, 'tensor': 1}")
    assert "compiling the train dispatch (K=3 steps; and 1 remainder size(s) [2])" in lines[0]
    done = [line for line in lines if line.startswith("[resnet/mini] init: done in ")]
    assert len(done) == 1 and "run_start" in done[0]
    assert lines.index(done[0]) < next(i for i, line in enumerate(lines) if " step " in line)


def test_init_beats_while_the_train_dispatch_compiles(watched):
    """The compile (2.2 s longer here) prints heartbeat lines between the init line and "init:
    done", none after. Bites: the heartbeat taken off `engine.compile`, or never stopped."""
    lines = watched["printed"].splitlines()
    beats = [i for i, line in enumerate(lines)
             if re.fullmatch(r"\[resnet/mini\] init: compiling \.\.\. \d+ s", line)]
    done = next(i for i, line in enumerate(lines) if "init: done in" in line)
    assert len(beats) >= 2 and 0 < beats[0] and beats[-1] < done, lines


def test_progress_round_trips_and_reads_old_checkpoint_dicts(tmp_path):
    """Bites: a field missing from `to_json` (it would restore as its default), or
    `from_json` refusing the `step` key and the old string-keyed dicts."""
    p = Progress(run_start_unix=12.5, init_s=1.0, train_s=2.0, eval_s=0.5, attempts=2,
                 input_start_s=0.25, cache_clear=True,
                 history=[{"elapsed_s": 3.0, "samples": 64, "quality": 0.5}])
    assert Progress.from_json(json.loads(json.dumps(p.to_json(7)))) == p
    old = {"train_s": 2.0, "eval_s": 0.5, "history": [], "attempts": 1, "cache_clear": False,
           "init_s": 1.0, "run_start_unix": 12.5, "step": 7}
    assert Progress.from_json(old) == Progress(run_start_unix=12.5, init_s=1.0, train_s=2.0,
                                               eval_s=0.5, history=[], attempts=1,
                                               cache_clear=False)
    with checkpoint.manager(tmp_path) as mgr:
        state = {"w": np.arange(3.0, dtype=np.float32)}
        checkpoint.save(mgr, 7, state, p)
        shardings = {"w": jax.sharding.SingleDeviceSharding(jax.devices()[0])}
        abstract = {"w": jax.ShapeDtypeStruct((3,), np.float32)}
        _, restored = checkpoint.restore(mgr, abstract, shardings)
    assert restored == p


def test_compiled_dispatch_picks_the_executable_by_size():
    """Bites: returning `train` for every size (a remainder dispatch would run K steps)."""
    c = engine_lib.Compiled(train="k", train_by_size={2: "two"}, eval="e", flops_per_step=1.0,
                            steps_per_dispatch=3)
    assert c.dispatch(3) == "k" and c.dispatch(2) == "two"
    with pytest.raises(KeyError):
        c.dispatch(1)


def test_tensorboard_files_are_written_without_importing_tensorflow(tmp_path):
    """TensorFlow is installed here (the tfds extra), and tensorboard's writer imports it when it
    can: 5-13 s of init for a run that never uses it. The writer must use tensorboard's stub,
    and what it writes must still read back.
    Bites: dropping `_tensorboard_without_tensorflow()` (TensorFlow gets imported)."""
    code = (
        "import sys\n"
        "from tpubench.loops import writers as metrics\n"
        f"w = metrics.TensorBoardWriter({str(tmp_path)!r})\n"
        "w.write_scalars(7, {'train/loss': 2.5})\n"
        "w.close()\n"
        "print('tensorflow' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    [scalar] = acc.Scalars("train/loss")
    assert (scalar.step, scalar.value) == (7, 2.5)
