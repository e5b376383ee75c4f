"""Any interruption is survived (issue 33, item 4): SIGTERM and SIGINT at any instant, from the
imports to the final save; SIGKILL during a checkpoint save; a damaged newest checkpoint.

The subprocess tests run the ResNet smoke config (one tiny model, synthetic data) the way a user
does; the run-phase test the shortened ResNet mini of tests/test_timing.py (60 steps).
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import warnings

import jax
import pytest
import runs

from tpubench import config as config_lib
from tpubench.errors import UsageError
from tpubench.loops import checkpoint, preemption
from tpubench.loops import supervised as train

# The smoke config with an eval (and, with checkpoint_every_evals=1, a checkpoint) at every one
# of its 10 steps.
SMOKE_10 = {"run.max_train_samples": 80, "run.checkpoint_every_evals": 1}
# tests/test_timing.py's shortened mini: 3 evals of 20 steps, a target it cannot reach.
SHORT = {"data.source": "digits", "data.dataset": "sklearn_digits", "data.image_size": 8,
         "data.train_samples": 1437, "eval.samples": 360, "eval.batch_size": 120,
         "model.num_filters": 12, "eval.every_samples": 20 * 32, "run.max_train_samples": 60 * 32,
         "eval.target_value": 1.1}


def _flags(overrides: dict) -> list[str]:
    return [f"--config.{k}={v}" for k, v in overrides.items()]


def _spawn(*args: str, **env_extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=runs.REPO, env=runs.env(**env_extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, timeout: float = 300.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def _catches_sigterm(pid: int) -> bool:
    """Whether process `pid` has a handler for SIGTERM (Linux: SigCgt in /proc/PID/status);
    Python itself catches only SIGINT, so this turns true when `preemption.install()` ran."""
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines()
                      if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def _records(workdir) -> list[dict]:
    lines = (pathlib.Path(workdir) / "mlperf_log.txt").read_text().splitlines()
    return [json.loads(line.split(":::MLLOG ", 1)[1]) for line in lines if ":::MLLOG" in line]


def _keys(workdir, key: str) -> list[dict]:
    return [r for r in _records(workdir) if r["key"] == key]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("module, signum", [
    ("tpubench.cli", signal.SIGINT),
    ("workloads.resnet.main", signal.SIGTERM),
])
def test_a_signal_during_the_imports_ends_with_one_line(tmp_path, module, signum):
    """The signal lands as soon as the handler is in place: during the imports (absl, JAX),
    long before run_start, so nothing is trained or saved. Bites: the handler installed after
    the imports (SIGINT: a KeyboardInterrupt traceback; SIGTERM: killed, exit -15), or raising
    inside an import (a C extension prints the exception's traceback or turns it into an
    ImportError)."""
    workdir = tmp_path / "run"
    args = (["-m", "tpubench.cli", "run", "resnet"] if module == "tpubench.cli"
            else ["-m", module])
    child = _spawn(*args, "--config=smoke", f"--workdir={workdir}")
    _wait_for(lambda: _catches_sigterm(child.pid), timeout=10)
    child.send_signal(signum)
    out, err = child.communicate(timeout=300)
    name = signal.Signals(signum).name
    assert child.returncode == 0, err[-3000:]
    assert _lines(err) == [f"tpubench: {name} before run_start: nothing was trained, so nothing "
                           "was saved. Rerun the same command to start the run over."], err
    # Nothing trained, nothing saved. The signal is redelivered after each import (never
    # raised inside one), and imports run until the model is built (`tpubench` imports lazily,
    # so `tpubench list` needs no JAX): it can land once the workdir is open, with init records.
    assert checkpoint.latest_step(workdir) is None
    if (workdir / "mlperf_log.txt").exists():
        assert not _keys(workdir, "run_start")
    if module == "tpubench.cli":  # the rerun of the same command runs to its end
        done = runs.tpubench("run", "resnet", "--config=smoke", f"--workdir={workdir}")
        assert done.returncode == 1, done.stderr[-3000:]  # smoke: aborted at its budget
        assert runs.summary(workdir)["attempts"] == 1


def test_sigint_in_another_subcommand_ends_with_one_line_and_status_130(tmp_path):
    """`tpubench infer` (its imports and JAX's start take seconds): one line, exit 130, no
    traceback. Bites: the handler installed for `run` only (a KeyboardInterrupt traceback)."""
    child = _spawn("-m", "tpubench.cli", "infer", "resnet", "--config=smoke",
                   "--scenario=Offline", f"--workdir={tmp_path / 'infer'}")
    _wait_for(lambda: _catches_sigterm(child.pid), timeout=10)
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 130, err[-3000:]
    assert _lines(err) == ["tpubench: infer interrupted by SIGINT before it finished; nothing "
                           "it had finished is lost. Rerun the same command to do it again."], err


def test_a_signal_during_init_leaves_no_compile_cache_warning(session_compile_cache,
                                                               monkeypatch):
    """SIGTERM while JAX writes a compiled executable to its persistent cache (the moment a
    user saw "Error writing persistent compilation cache entry"): the run stops with
    `PreemptedBeforeRun` and JAX warns nothing. The signal is sent from inside JAX's cache
    write, so the instant is exact. Bites: `PreemptedBeforeRun` an `Exception` (JAX's
    `except Exception` around the write turns it into that warning and goes on compiling)."""
    from jax._src import compilation_cache as jax_cc

    if session_compile_cache is None:
        pytest.skip("the session runs without the compilation cache")
    real_put = jax_cc.put_executable_and_time
    sent = []

    def put(*args, **kwargs):
        sent.append(True)
        os.kill(os.getpid(), signal.SIGTERM)  # handled here, in the main thread
        return real_put(*args, **kwargs)

    monkeypatch.setattr(jax_cc, "put_executable_and_time", put)
    preemption.install()
    preemption.set_phase(preemption.INIT)
    unique = float(time.time_ns() % 1_000_003)  # a computation the cache has never seen
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(preemption.PreemptedBeforeRun) as e:
                jax.jit(lambda x: x * 3.0 + unique).lower(jax.numpy.ones(7)).compile()
    finally:
        preemption.reset()
    assert sent and e.value.signum == signal.SIGTERM
    assert [str(w.message) for w in caught if "cache" in str(w.message).lower()] == []


def test_sigint_during_the_run_saves_and_the_rerun_resumes(tmp_path):
    """Ctrl-C just after run_start, then again while the run saves: the run saves a checkpoint,
    says "rerun to resume", exits 0; the rerun of the same command resumes (one run_start, one
    tpubench_resume) and ends at the budget. Bites: SIGINT left to Python (a KeyboardInterrupt
    traceback, nothing saved, the rerun starts over), or the second one aborting the save."""
    workdir = tmp_path / "run"
    cmd = ["-m", "tpubench.cli", "run", "resnet", "--config=mini", f"--workdir={workdir}",
           *_flags(SHORT)]
    child = _spawn(*cmd)
    log = workdir / "mlperf_log.txt"
    assert _wait_for(lambda: log.exists() and "run_start" in log.read_text())
    child.send_signal(signal.SIGINT)
    time.sleep(0.05)
    child.send_signal(signal.SIGINT)  # while it stops and saves: a line, nothing else
    _, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "SIGINT received: the run stops after the dispatch in flight" in err
    assert checkpoint.latest_step(workdir) is not None
    assert len(_keys(workdir, "tpubench_preempted")) == 1
    done = subprocess.run([sys.executable, *cmd], cwd=runs.REPO, env=runs.env(),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stderr[-3000:]  # the budget: aborted
    s = runs.summary(workdir)
    assert s["resumed"] is True and s["attempts"] == 2 and s["steps"] == 60
    assert len(_keys(workdir, "run_start")) == 1 and len(_keys(workdir, "run_stop")) == 1
    assert [r["value"] for r in _keys(workdir, "tpubench_resume")] == [2]


_KILL_MID_SAVE = """
import os, pathlib, sys, threading, time
ckpt = pathlib.Path(sys.argv[1]) / "checkpoints"
def watch():  # SIGKILL the moment a save is under way, once two checkpoints are complete
    while True:
        names = os.listdir(ckpt) if ckpt.is_dir() else []
        if sum(n.isdigit() for n in names) >= 2 and any("orbax-checkpoint-tmp" in n for n in names):
            os.kill(os.getpid(), 9)
        time.sleep(0.0005)
threading.Thread(target=watch, daemon=True).start()
sys.argv = ["main", "--config=smoke", "--workdir=" + sys.argv[1], *sys.argv[2:]]
from tpubench import entry
entry.run("resnet")
"""


def test_sigkill_mid_save_and_a_damaged_newest_checkpoint_fall_back_to_the_previous(tmp_path):
    """A real SIGKILL while orbax writes a checkpoint (its temporary directory exists), then the
    newest complete checkpoint damaged (its data files truncated): the rerun ignores the
    half-written save, sets the damaged checkpoint aside (kept, one line on stderr), resumes
    from the one before and runs to its end. Bites: restoring the newest checkpoint without a
    fallback (the orbax/TensorStore traceback a user saw), or deleting the damaged one."""
    workdir = tmp_path / "run"
    killed = subprocess.run([sys.executable, "-c", _KILL_MID_SAVE, str(workdir),
                             *_flags(SMOKE_10)], cwd=runs.REPO, env=runs.env(),
                            capture_output=True, text=True, timeout=600, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    names = os.listdir(workdir / "checkpoints")
    assert any("orbax-checkpoint-tmp" in n for n in names), names  # killed mid-save
    steps = sorted(int(n) for n in names if n.isdigit())
    newest, previous = steps[-1], steps[-2]
    data = [p for p in (workdir / "checkpoints" / str(newest) / "state").rglob("*")
            if p.is_file() and p.parent.name == "d"]
    assert data
    for p in data:
        os.truncate(p, 10)

    done = runs.run_main("resnet", "smoke", workdir, *_flags(SMOKE_10))
    assert done.returncode == 1, done.stderr[-3000:]  # smoke: aborted at its budget
    assert "Traceback" not in done.stderr
    aside = workdir / checkpoint.DAMAGED_DIR / str(newest)
    said = [line for line in done.stderr.splitlines() if "cannot be restored" in line]
    assert said == [said[0]] and f"checkpoint {newest} cannot be restored" in said[0]
    assert str(aside) in said[0]
    assert sorted(p.name for p in (aside / "state").rglob("*") if p.parent.name == "d") == sorted(
        p.name for p in data)  # kept whole, under its new name
    s = runs.summary(workdir)
    assert s["resumed"] is True and s["steps"] == 10
    resumes = _keys(workdir, "tpubench_resume")
    assert [r["metadata"]["step"] for r in resumes] == [previous]
    assert len(_keys(workdir, "run_start")) == 1 and len(_keys(workdir, "run_stop")) == 1


def test_the_orphaned_reads_of_a_set_aside_checkpoint_are_not_reported_and_others_are(tmp_path):
    """One failing read ends orbax's restore; its sibling reads of the same damaged files fail
    later, unawaited, and asyncio logs "Task exception was never retrieved" with a page-long
    traceback apiece (seen in the SIGKILL test above, depending on timing). Once checkpoint
    `<step>` is set aside, those reports are dropped; the same report for any other path, and
    any other asyncio error, still reach stderr. Bites: no filter (the pages return), or one
    that drops every asyncio error."""
    import logging

    damaged, other = tmp_path / "checkpoints" / "2", tmp_path / "checkpoints" / "3"
    checkpoint._quiet_orphaned_reads(str(damaged))
    logger, seen = logging.getLogger("asyncio"), []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        for path in (damaged, other):
            err = ValueError(f'OUT_OF_RANGE: Error reading "{path}/state/d/x": byte range')
            logger.error("Task exception was never retrieved\nfuture: <Task finished>",
                         exc_info=(ValueError, err, None))
        logger.error("Exception in callback: %s", f"{damaged}/state")
    finally:
        logger.removeHandler(handler)
    assert seen == ["Task exception was never retrieved\nfuture: <Task finished>",
                    f"Exception in callback: {damaged}/state"]


def _preempted_with_two_checkpoints(workdir) -> list[int]:
    """A smoke run stopped by SIGTERM after its third dispatch, with a checkpoint at each eval:
    checkpoints 2 and 3 (keep 2) in `workdir`."""
    import dataclasses

    from tpubench.loops import engine as engine_lib

    real = engine_lib.JitEngine.compile
    count = {"n": 0}

    def compile_(self, *args, **kwargs):
        compiled = real(self, *args, **kwargs)
        inner = compiled.train

        def train_(*a):
            out = inner(*a)
            count["n"] += 1
            if count["n"] == 3:
                os.kill(os.getpid(), signal.SIGTERM)
            return out

        return dataclasses.replace(compiled, train=train_)

    engine_lib.JitEngine.compile = compile_
    try:
        first = train.train_and_evaluate(config_lib.load("resnet", "smoke", SMOKE_10), workdir)
    finally:
        engine_lib.JitEngine.compile = real
    assert first["status"] == "preempted"
    return sorted(int(n) for n in os.listdir(workdir / "checkpoints") if n.isdigit())


def test_with_every_checkpoint_damaged_the_run_says_so_and_starts_over(tmp_path, capsys):
    """The newest checkpoint's `_METADATA` missing, the previous one's data truncated: both set
    aside (kept), stderr says the run starts over, and it does, in the same workdir, its first
    log kept as a failed attempt. Bites: a loop that gives up (the traceback) or that resumes
    with no state."""
    workdir = tmp_path / "run"
    assert _preempted_with_two_checkpoints(workdir) == [2, 3]
    (workdir / "checkpoints" / "3" / "state" / "_METADATA").unlink()
    for p in (workdir / "checkpoints" / "2" / "state").rglob("*"):
        if p.is_file() and p.parent.name == "d":
            os.truncate(p, 10)
    capsys.readouterr()
    s = train.train_and_evaluate(config_lib.load("resnet", "smoke", SMOKE_10), workdir)
    err = capsys.readouterr().err
    assert "checkpoint 3 cannot be restored" in err and "checkpoint 2 cannot be restored" in err
    assert "no usable checkpoint is left: the run starts over" in err
    assert sorted(os.listdir(workdir / checkpoint.DAMAGED_DIR)) == ["2", "3"]
    assert s["status"] == "aborted" and s["steps"] == 10 and s["resumed"] is False
    assert s["attempts"] == 1
    assert (workdir / "mlperf_log.failed_attempt0.txt").exists()
    assert len(_keys(workdir, "run_start")) == 1 and not _keys(workdir, "tpubench_resume")
    assert len(_keys(workdir, "init_start")) == 1  # a fresh log; the first one set aside


def test_fewer_than_two_checkpoints_is_refused_before_any_compute(tmp_path):
    """`run.checkpoint_keep=1` would leave nothing to fall back to. Bites: no check (the run
    starts and writes its log)."""
    workdir = tmp_path / "run"
    cfg = config_lib.load("resnet", "smoke", {"run.checkpoint_keep": 1})
    with pytest.raises(UsageError, match="checkpoint_keep=2"):
        train.train_and_evaluate(cfg, workdir)
    assert not workdir.exists()


def test_an_interruption_wrapped_by_jaxlib_is_still_the_interruption():
    """Seen on CI: SIGTERM during flax init landed in jaxlib's pytree equality, which raised
    "ValueError: Exception raised while checking equality of metadata fields" from it, and the
    run's close() on the way out had forgotten the signal: exit 1 with a traceback. Bites:
    `as_interrupt` without the walk along __cause__/__context__."""

    class Metadata:
        def __hash__(self):
            return 1

        def __eq__(self, other):
            raise preemption.PreemptedBeforeRun(signal.SIGTERM)

    @jax.tree_util.register_pytree_node_class
    class Node:
        def __init__(self, meta, x):
            self.meta, self.x = meta, x

        def tree_flatten(self):
            return (self.x,), self.meta

        @classmethod
        def tree_unflatten(cls, meta, children):
            return cls(meta, *children)

    preemption.reset()  # the signal forgotten, as after close()
    with pytest.raises(ValueError) as raised:
        _ = (jax.tree_util.tree_structure(Node(Metadata(), 1))
             == jax.tree_util.tree_structure(Node(Metadata(), 2)))
    found = preemption.as_interrupt(raised.value)
    assert isinstance(found, preemption.PreemptedBeforeRun) and found.exit_status == 143
    assert preemption.as_interrupt(ValueError("unrelated")) is None
