"""The one supervised time-to-quality loop.

    init_start   mesh, state, AOT compile of train block + eval step, restore   (untimed)
    init_stop
    run_start    clock starts; only now is the dataset touched
      block: K steps per dispatch until the next eval point; metrics read one block late
      eval on device; eval_accuracy; stop at target ("success") or budget ("aborted")
    run_stop     clock stops
    final checkpoint, summary.json                                               (untimed)

Every clock read follows `block_until_ready`. SIGTERM saves a checkpoint and returns
"preempted"; re-running with the same workdir resumes from it, clock included.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any

import jax
import ml_collections
import numpy as np

from tpubench import checkpoint, data, perf, registry
from tpubench import engine as engine_lib
from tpubench import mesh as mesh_lib
from tpubench import mllog as mllog_lib
from tpubench.errors import UsageError
from tpubench.mllog import constants as K
from tpubench.results import RunDir
from tpubench.workload import Workload

jax.config.update("jax_threefry_partitionable", True)


class Diverged(RuntimeError):
    """The loss became NaN or Inf."""


@dataclasses.dataclass(frozen=True)
class Cadence:
    """Steps per dispatch and where evals fall, all in whole steps."""

    steps_per_dispatch: int
    steps_per_eval: int
    offset_steps: int
    max_steps: int

    @classmethod
    def from_config(cls, config: ml_collections.ConfigDict, train_samples: int) -> Cadence:
        """Eval every `eval_every_samples` (default one epoch) after `eval_offset_samples`; K is
        the largest divisor of the eval interval (and offset) not above steps_per_dispatch."""
        gbs = config.global_batch_size
        every = config.eval_every_samples or train_samples
        if every <= 0:
            raise UsageError("Set eval_every_samples (or the workload's train_samples).")
        per_eval = max(1, math.ceil(every / gbs))
        offset = math.ceil(config.eval_offset_samples / gbs)
        g = math.gcd(per_eval, offset) if offset else per_eval
        k = max(d for d in range(1, max(1, config.steps_per_dispatch) + 1) if g % d == 0)
        budget = config.max_train_samples or 100 * max(train_samples, gbs)
        n_evals = max(1, math.ceil((math.ceil(budget / gbs) - offset) / per_eval))
        return cls(k, per_eval, offset, offset + n_evals * per_eval)

    def next_eval(self, step: int) -> int:
        """The first eval step strictly after `step`."""
        j = max(0, (step - self.offset_steps) // self.steps_per_eval) + 1
        return self.offset_steps + j * self.steps_per_eval


def platform_name(devices: list[Any]) -> str:
    """e.g. '8xTPU_v5p', '1xNVIDIA_H200', '1xcpu'."""
    kind = devices[0].device_kind if devices[0].platform != "cpu" else "cpu"
    return f"{len(devices)}x{kind.replace(' ', '_')}"


def _epoch(workload: Workload, samples: int) -> float | int:
    epochs = samples / max(1, workload.train_samples)
    return int(epochs) if float(epochs).is_integer() else round(epochs, 4)


def _log_header(log: mllog_lib.RunLogger, workload: Workload, platform: str) -> None:
    c = workload.config
    log.event(K.SUBMISSION_ORG, c.submission_org)
    suffix = "" if c.is_mlperf else f"-{c.config_name}-{c.dataset}"
    log.event(K.SUBMISSION_PLATFORM, (c.submission_platform or platform) + suffix)
    log.event(K.SUBMISSION_DIVISION, c.submission_division)
    log.event(K.SUBMISSION_STATUS, c.submission_status)
    log.event(K.SUBMISSION_BENCHMARK, workload.mlperf_name)


def _evaluate(workload: Workload, eng, compiled, state, source: str) -> tuple[float, float]:
    """(quality, seconds): all eval batches on device, one host read at the end."""
    c = workload.config
    t = time.perf_counter()
    n = math.ceil(workload.eval_samples / c.eval_batch_size)
    pi, pc = jax.process_index(), jax.process_count()
    if source == "synthetic":
        batches = data.synthetic_eval_batches(workload, n, pc)
    else:
        batches = data.fixed_eval_batches(workload.eval_batches(pi, pc), n)
    sums: dict[str, jax.Array] = {}
    per_example: dict[str, list] = {}
    for batch in batches:
        out = compiled["eval"](state, eng.put(batch, block=False))
        for k, v in out.items():
            if np.ndim(v) == 0:
                sums[k] = v if k not in sums else sums[k] + v
            else:
                per_example.setdefault(k, []).append(v)
    results: dict[str, Any] = {k: np.asarray(jax.device_get(v)) for k, v in sums.items()}
    for k, vs in per_example.items():
        results[k] = np.concatenate([engine_lib.gather_to_host(v) for v in vs])
    quality = float(workload.eval_finalize(results))
    return quality, time.perf_counter() - t


def _check(metrics: dict[str, jax.Array] | None, step: int) -> None:
    if metrics is not None and not bool(metrics["finite"]):
        raise Diverged(
            f"The training loss became NaN/Inf in the block ending at step {step} (last loss "
            f"{float(metrics['last_loss'])}). Lower the learning rate or check the input data; "
            "the run is stopped and marked aborted."
        )


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> dict:
    """Run `config`'s workload to its target (or budget) in `workdir`; returns the summary."""
    # ---- validate everything before any compute ------------------------------------------------
    workload = registry.create(config)
    run = RunDir(workdir)
    run.check_not_finished()
    source = config.data_source
    if source != "synthetic":
        workload.check_data()
    mesh = mesh_lib.build_mesh(config)
    mesh_lib.check_batch(config.global_batch_size, mesh)
    mesh_lib.check_batch(config.eval_batch_size, mesh, "eval_batch_size")
    cadence = Cadence.from_config(config, workload.train_samples)
    devices = jax.devices()
    platform = platform_name(devices)
    is_main = jax.process_index() == 0
    resumed = checkpoint.has_checkpoint(workdir)
    if is_main:
        run.prepare()

    log = mllog_lib.RunLogger(run.log_path, enabled=is_main)
    try:
        return _run(workload, run, log, mesh, cadence, platform, resumed, source)
    finally:
        log.close()


def _run(workload, run, log, mesh, cadence, platform, resumed, source) -> dict:
    c = workload.config
    log.event(K.CACHE_CLEAR, True)
    log.start(K.INIT_START)
    t_init = time.perf_counter()
    _log_header(log, workload, platform)
    eng = engine_lib.create(workload, mesh)
    compiled = eng.compile(cadence.steps_per_dispatch, synthetic=source == "synthetic")
    mgr = checkpoint.manager(run.path, keep=c.checkpoint_keep)
    progress: dict[str, Any] = {"elapsed_s": 0.0, "train_s": 0.0, "eval_s": 0.0,
                                "history": [], "attempts": 0}
    if resumed:
        state, progress = checkpoint.restore(mgr, eng.abstract_state, eng.state_shardings)
        state = eng.from_checkpoint(state)
    else:
        state = eng.init_state(c.seed)
    progress["attempts"] += 1
    for key, value in workload.mllog_hyperparameters().items():
        value, metadata = value if isinstance(value, tuple) else (value, None)
        log.event(key, value, metadata=metadata)
    log.event(K.TRAIN_SAMPLES, workload.train_samples)
    log.event(K.EVAL_SAMPLES, workload.eval_samples)
    step = int(jax.device_get(eng.for_checkpoint(state).step))
    jax.block_until_ready(state)
    init_s = time.perf_counter() - t_init
    log.end(K.INIT_STOP)

    # ---- the clock runs from here ---------------------------------------------------------------
    log.start(K.RUN_START)
    t0 = time.perf_counter()
    elapsed = lambda: progress["elapsed_s"] + time.perf_counter() - t0
    gbs, kdisp = c.global_batch_size, cadence.steps_per_dispatch
    # Reading the previous block's metrics bounds the queue at 2 blocks; CPU needs a tighter bound.
    cpu_block = jax.devices()[0].platform == "cpu" and 2 * kdisp > c.cpu_max_steps_in_flight
    pi, pc = jax.process_index(), jax.process_count()
    feed = None
    if source != "synthetic":
        blocks = data.stack_blocks(workload.train_batches(step, pi, pc), kdisp)
        feed = data.Prefetcher(blocks, lambda b: eng.put(b, block=True))
    status, error, quality = "aborted", None, float("nan")
    with checkpoint.PreemptionFlag() as preempt, eng.context():
        try:
            while True:
                stop = min(cadence.next_eval(step), cadence.max_steps)
                first = _epoch(workload, step * gbs)
                log.start(K.BLOCK_START, metadata={
                    "first_epoch_num": first,
                    "epoch_count": max(_epoch(workload, (stop - step) * gbs), 1e-4)})
                t_block, pending = time.perf_counter(), None
                while step < stop:
                    args = (state,) if feed is None else (state, next(feed))
                    state, metrics = compiled["train"](*args)
                    step += kdisp
                    _check(pending, step - kdisp)  # previous block: already done, no stall
                    pending = metrics
                    if cpu_block:
                        jax.block_until_ready(metrics)
                    if preempt.reached(step // kdisp):
                        return _preempt(run, mgr, eng, state, progress, elapsed(), log, step)
                _check(jax.block_until_ready(pending), step)
                dt = time.perf_counter() - t_block
                progress["train_s"] += dt
                log.end(K.BLOCK_STOP, metadata={"first_epoch_num": first})
                epoch = _epoch(workload, step * gbs)
                log.start(K.EVAL_START, metadata={"epoch_num": epoch})
                quality, eval_s = _evaluate(workload, eng, compiled, state, source)
                progress["eval_s"] += eval_s
                log.end(K.EVAL_STOP, metadata={"epoch_num": epoch})
                log.event(K.EVAL_ACCURACY, quality, metadata={"epoch_num": epoch})
                progress["history"].append(
                    {"elapsed_s": elapsed(), "samples": step * gbs, "quality": quality})
                _say(f"[{workload.name}/{c.config_name}] step {step} epoch {epoch}: "
                     f"{workload.target.metric} {quality:.4f} (target {workload.target.value}) "
                     f"at {elapsed():.1f} s")
                if workload.target.reached(quality):
                    status = "success"
                    break
                if step >= cadence.max_steps or (c.max_time_s and elapsed() > c.max_time_s):
                    break
                every = c.checkpoint_every_evals
                if every and len(progress["history"]) % every == 0:
                    _save(mgr, eng, state, progress, elapsed(), step)
        except Diverged as e:
            error = str(e)
        finally:
            if feed is not None:
                feed.close()
    jax.block_until_ready(state)
    run_s = elapsed()
    log.end(K.RUN_STOP, metadata={"status": status})
    # ---- untimed from here -------------------------------------------------------------------
    _save(mgr, eng, state, progress, run_s, step)
    mgr.close()
    return _summarize(workload, run, status, error, quality, run_s, init_s, progress, compiled,
                      platform, resumed, step, mesh)


def _say(message: str) -> None:
    if jax.process_index() == 0:
        print(message, flush=True)


def _save(mgr, eng, state, progress, elapsed_s, step) -> None:
    progress = dict(progress, elapsed_s=elapsed_s, step=step)
    checkpoint.save(mgr, step, eng.for_checkpoint(state), progress)


def _preempt(run, mgr, eng, state, progress, elapsed_s, log, step) -> dict:
    jax.block_until_ready(state)
    _save(mgr, eng, state, progress, elapsed_s, step)
    mgr.close()
    log.event("preempted", step, metadata={"elapsed_s": elapsed_s})
    return {"status": "preempted", "step": step, "workdir": str(run.path)}


def _summarize(workload, run, status, error, quality, run_s, init_s, progress, compiled,
               platform, resumed, step, mesh) -> dict:
    c = workload.config
    train_s = progress["train_s"]
    samples = step * c.global_batch_size
    peak = perf.peak_flops(jax.devices(), c.dtype)
    summary = {
        "workload": workload.name,
        "config": c.config_name,
        "dataset": c.dataset,
        "data_source": c.data_source,
        "is_mlperf": bool(c.is_mlperf),
        "status": status,
        "error": error,
        "target": workload.target.value,
        "target_metric": workload.target.metric,
        "final_quality": quality,
        "time_to_target_s": run_s if status == "success" else None,
        "run_time_s": run_s,
        "init_s": init_s,
        "train_s": train_s,
        "eval_s": progress["eval_s"],
        "train_examples_per_s": samples / train_s if train_s else 0.0,
        "flops_per_step": compiled["flops_per_step"],
        "mfu": perf.mfu(compiled["flops_per_step"], step, train_s, peak),
        "peak_flops": peak,
        "steps": step,
        "samples": samples,
        "seed": c.seed,
        "resumed": bool(resumed),
        "attempts": progress["attempts"],
        "platform": platform,
        "process_count": jax.process_count(),
        "parallelism": c.parallelism,
        "mesh": dict(mesh.shape),
        "global_batch_size": c.global_batch_size,
        "quality_history": progress["history"],
        "mlperf_log": str(run.log_path),
        "jax_version": jax.__version__,
    }
    if jax.process_index() == 0:
        run.write_summary(summary)
    return summary
