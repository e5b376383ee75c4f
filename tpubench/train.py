"""The one supervised time-to-quality loop.

    init_start   mesh, state, AOT compile of the train blocks + eval step       (untimed)
    init_stop
    run_start    the clock starts (wall time); only now is the dataset touched
      block: dispatches of K steps (and one remainder block) up to the next eval, with no
             device-to-host read inside it (a transfer guard enforces it)
      eval on device; eval_accuracy; stop at target ("success") or budget ("aborted")
    run_stop     the clock stops
    final checkpoint, summary.json                                               (untimed)

Every clock read follows `block_until_ready` (`tpubench.clock`). SIGTERM saves a checkpoint and
returns "preempted" (`tpubench.preemption`); rerunning with the same workdir resumes from it,
appending to the same MLPerf log, and the clock, never paused, runs from the first attempt's
run_start to the final run_stop (docs/timing.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import jax
import ml_collections
import numpy as np

from tpubench import checkpoint, chips, data, page_cache, perf, preemption, registry
from tpubench import engine as engine_lib
from tpubench import mesh as mesh_lib
from tpubench import mllog as mllog_lib
from tpubench import sharding_report as sharding_lib
from tpubench.cadence import Cadence, block_first_epoch, epochs_trained
from tpubench.clock import Clock, Stopwatch, now_unix
from tpubench.mllog import constants as K
from tpubench.results import RunDir
from tpubench.workload import Workload

jax.config.update("jax_threefry_partitionable", True)

PREEMPTED_KEY = "tpubench_preempted"
RESUME_KEY = "tpubench_resume"


class Diverged(RuntimeError):
    """The loss became NaN or Inf."""


def _log_header(log: mllog_lib.RunLogger, workload: Workload, platform: str) -> None:
    c = workload.config
    log.event(K.SUBMISSION_ORG, c.submission_org)
    suffix = "" if c.is_mlperf else f"-{c.config_name}-{c.dataset}"
    log.event(K.SUBMISSION_PLATFORM, (c.submission_platform or platform) + suffix)
    log.event(K.SUBMISSION_DIVISION, c.submission_division)
    log.event(K.SUBMISSION_STATUS, c.submission_status)
    log.event(K.SUBMISSION_BENCHMARK, workload.mlperf_name)


def _evaluate(workload: Workload, eng, compiled, state, source: str) -> tuple[float, float]:
    """(quality, seconds): every eval batch dispatched, then one host read of all outputs."""
    c = workload.config
    watch = Stopwatch()
    n = -(-workload.eval_samples // c.eval_batch_size)
    pi, pc = jax.process_index(), jax.process_count()
    if source == "synthetic":
        batches = data.synthetic_eval_batches(workload, n, pc)
    else:
        batches = data.fixed_eval_batches(workload.eval_batches(pi, pc), n)
    outputs = [compiled["eval"](state, eng.put(batch, block=False)) for batch in batches]
    quality = float(workload.eval_finalize(eng.eval_to_host(outputs)))
    return quality, watch.stop()


def _check(block_metrics: list[dict[str, jax.Array]], step: int) -> None:
    """One host read of every dispatch's metrics at the end of a block: stop on NaN/Inf."""
    host = jax.device_get(block_metrics)
    for m in host:
        if not bool(np.all(np.asarray(m["finite"]))):
            last = float(np.asarray(m["last_loss"]).reshape(-1)[0])
            raise Diverged(
                f"The training loss became NaN/Inf in the block ending at step {step} (last "
                f"loss {last}). Lower the learning rate or check the input data; the run is "
                "stopped and marked aborted."
            )


def train_and_evaluate(config: ml_collections.ConfigDict, workdir) -> dict:
    """Run `config`'s workload to its target (or budget) in `workdir`; returns the summary."""
    preemption.set_phase(preemption.INIT)
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
    start_step = checkpoint.latest_step(workdir)
    if jax.process_index() == 0:
        run.prepare(resumed=start_step is not None)
    log = mllog_lib.RunLogger(run.log_path, enabled=jax.process_index() == 0)
    try:
        return _run(workload, run, log, mesh, cadence, start_step, source)
    finally:
        log.close()
        preemption.reset()


def _dispatch_sizes(cadence: Cadence, step: int) -> Iterator[int]:
    """Every dispatch's size from `step` to the budget (what the input feed stacks)."""
    for stop in cadence.eval_steps:
        if stop > step:
            yield from cadence.dispatches(step, stop)
            step = stop


def _run(workload, run, log, mesh, cadence, start_step, source) -> dict:
    c = workload.config
    resumed = start_step is not None
    t_init = time.perf_counter()
    platform = chips.platform_name(jax.devices())
    cleared = False
    if not resumed:
        cleared = bool(c.clear_page_cache) and page_cache.drop()
        log.event(K.CACHE_CLEAR, cleared)
        log.start(K.INIT_START)
        _log_header(log, workload, platform)
    eng = engine_lib.create(workload, mesh)
    sharding_lib.write(run.path, eng)
    compiled = eng.compile(cadence.steps_per_dispatch, synthetic=source == "synthetic",
                           other_sizes=cadence.remainder_sizes(start_step or 0))
    mgr = checkpoint.manager(run.path, keep=c.checkpoint_keep)
    if resumed:
        state, progress = checkpoint.restore(mgr, eng.abstract_state, eng.state_shardings)
        state = eng.from_checkpoint(state)
    else:
        state = eng.init_state(c.seed)
        progress = {"train_s": 0.0, "eval_s": 0.0, "history": [], "attempts": 0,
                    "cache_clear": cleared}
        for key, value in workload.mllog_hyperparameters().items():
            value, metadata = value if isinstance(value, tuple) else (value, None)
            log.event(key, value, metadata=metadata)
        log.event(K.TRAIN_SAMPLES, workload.train_samples)
        log.event(K.EVAL_SAMPLES, workload.eval_samples)
    progress["attempts"] += 1
    preemption.check_before_run()
    step = start_step or 0  # the restored checkpoint's step (no device read of the state)
    jax.block_until_ready(state)
    if resumed:
        # On the clock (it never pauses): the outage and this re-init count.
        log.event(RESUME_KEY, progress["attempts"], metadata={"step": step})
        preemption.set_phase(preemption.RUN)
    else:
        progress["init_s"] = time.perf_counter() - t_init
        log.end(K.INIT_STOP)
        preemption.set_phase(preemption.RUN)
        progress["run_start_unix"] = now_unix()
        log.start(K.RUN_START, time_ms=round(progress["run_start_unix"] * 1000))
    clock = Clock(progress["run_start_unix"])
    return _loop(workload, run, log, mesh, cadence, source, eng, compiled, mgr, state,
                 progress, clock, step, platform, resumed)


def _loop(workload, run, log, mesh, cadence, source, eng, compiled, mgr, state, progress,
          clock, step, platform, resumed) -> dict:
    c = workload.config
    gbs, kdisp, ts = c.global_batch_size, cadence.steps_per_dispatch, workload.train_samples
    # Back-pressure without reading the device: wait (block_until_ready) for the dispatch before
    # the previous one, so at most two are queued; simulated CPU devices need a tighter bound.
    cpu_wait = jax.devices()[0].platform == "cpu" and 2 * kdisp > c.cpu_max_steps_in_flight
    pi, pc = jax.process_index(), jax.process_count()
    feed = None
    if source != "synthetic":
        blocks = data.stack_blocks(workload.train_batches(step, pi, pc),
                                   _dispatch_sizes(cadence, step))
        feed = data.Prefetcher(blocks, lambda b: eng.put(b, block=True))
    status, error, quality, dispatch = "aborted", None, float("nan"), 0
    with preemption.Flag(pc) as preempt, eng.context():
        try:
            while True:
                stop = cadence.next_eval(step)
                first = block_first_epoch(step * gbs, ts)
                log.start(K.BLOCK_START, metadata={
                    "first_epoch_num": first,
                    "epoch_count": max(epochs_trained((stop - step) * gbs, ts), 1e-4)})
                watch, block_metrics, preempted = Stopwatch(), [], False
                with jax.transfer_guard_device_to_host("disallow"):
                    for size in cadence.dispatches(step, stop):
                        fn = (compiled["train"] if size == kdisp
                              else compiled["train_by_size"][size])
                        state, metrics = fn(state) if feed is None else fn(state, next(feed))
                        step, dispatch = step + size, dispatch + 1
                        block_metrics.append(metrics)
                        if cpu_wait:
                            jax.block_until_ready(metrics)
                        elif len(block_metrics) > 1:
                            jax.block_until_ready(block_metrics[-2])
                        if preempt.reached(dispatch):
                            preempted = True
                            break
                progress["train_s"] += watch.stop(state)
                if preempted:
                    return _preempt(run, mgr, eng, state, progress, clock, log, step)
                _check(block_metrics, step)
                log.end(K.BLOCK_STOP, metadata={"first_epoch_num": first})
                epoch = epochs_trained(step * gbs, ts)
                log.start(K.EVAL_START, metadata={"epoch_num": epoch})
                quality, eval_s = _evaluate(workload, eng, compiled, state, source)
                progress["eval_s"] += eval_s
                log.end(K.EVAL_STOP, metadata={"epoch_num": epoch})
                log.event(K.EVAL_ACCURACY, quality, metadata={"epoch_num": epoch})
                elapsed = clock.read(state)
                progress["history"].append(
                    {"elapsed_s": elapsed, "samples": step * gbs, "quality": quality})
                _say(f"[{workload.name}/{c.config_name}] step {step} epoch {epoch}: "
                     f"{workload.target.metric} {quality:.4f} (target {workload.target.value}) "
                     f"at {elapsed:.1f} s")
                if workload.target.reached(quality):
                    status = "success"
                    break
                if step >= cadence.max_steps or (c.max_time_s and elapsed > c.max_time_s):
                    break
                every = c.checkpoint_every_evals
                if every and len(progress["history"]) % every == 0:
                    _save(mgr, eng, state, progress, step)
        except Diverged as e:
            error = str(e)
        finally:
            if feed is not None:
                feed.close()
    run_stop_unix = clock.read_unix(state)
    preemption.set_phase(preemption.FINISH)
    log.end(K.RUN_STOP, metadata={"status": status}, time_ms=round(run_stop_unix * 1000))
    run_s = run_stop_unix - progress["run_start_unix"]
    # ---- untimed from here -------------------------------------------------------------------
    _save(mgr, eng, state, progress, step)
    mgr.close()
    return _summarize(workload, run, status, error, quality, run_s, progress, compiled,
                      platform, resumed, step, mesh)


def _say(message: str) -> None:
    if jax.process_index() == 0:
        print(message, flush=True)


def _save(mgr, eng, state, progress, step) -> None:
    checkpoint.save(mgr, step, eng.for_checkpoint(state), dict(progress, step=step))


def _preempt(run, mgr, eng, state, progress, clock, log, step) -> dict:
    elapsed = clock.read(state)
    preemption.set_phase(preemption.FINISH)
    _save(mgr, eng, state, progress, step)
    mgr.close()
    log.event(PREEMPTED_KEY, step, metadata={"attempt": progress["attempts"],
                                             "elapsed_s": round(elapsed, 3)})
    _say(f"Preempted at step {step} ({elapsed:.1f} s on the clock): checkpoint saved. Rerun the "
         "same command to resume; the clock keeps running meanwhile (MLPerf never pauses it).")
    return {"status": "preempted", "step": step, "workdir": str(run.path),
            "attempts": progress["attempts"]}


def _finite_or_none(x: float) -> float | None:
    """NaN (an MFU above 100%, flagged by perf.mfu) becomes null: summary.json stays strict JSON."""
    return None if x != x else x


def _summarize(workload, run, status, error, quality, run_s, progress, compiled,
               platform, resumed, step, mesh) -> dict:
    c = workload.config
    train_s, eval_s = progress["train_s"], progress["eval_s"]
    samples = step * c.global_batch_size
    peak = perf.peak_flops(jax.devices(), c.dtype)
    summary = {
        "workload": workload.name,
        "config": c.config_name,
        "dataset": c.dataset,
        "data_source": c.data_source,
        "is_mlperf": bool(c.is_mlperf),
        "division": c.submission_division,
        "open_reasons": list(c.get("open_reasons", ()) or ()),
        "status": status,
        "error": error,
        "target": workload.target.value,
        "target_metric": workload.target.metric,
        "final_quality": quality,
        "time_to_target_s": run_s if status == "success" else None,
        "run_time_s": run_s,
        "run_start_unix": progress["run_start_unix"],
        "init_s": progress["init_s"],
        "train_s": train_s,
        "eval_s": eval_s,
        # On the clock but neither training nor eval: input start-up, host work between blocks,
        # checkpoints on the eval cadence, and for resumed runs the outage and re-init.
        "other_s": run_s - train_s - eval_s,
        "train_examples_per_s": samples / train_s if train_s else 0.0,
        "flops_per_step": compiled["flops_per_step"],
        "mfu": _finite_or_none(perf.mfu(compiled["flops_per_step"], step, train_s, peak)),
        "peak_flops": peak,
        "steps": step,
        "samples": samples,
        "seed": c.seed,
        "resumed": bool(resumed),
        "attempts": progress["attempts"],
        "cache_clear": bool(progress.get("cache_clear", False)),
        "platform": platform,
        "process_count": jax.process_count(),
        "parallelism": c.parallelism,
        "mesh": dict(mesh.shape),
        "global_batch_size": c.global_batch_size,
        "quality_history": progress["history"],
        "mlperf_log": str(run.log_path),
        "jax_version": jax.__version__,
        "sharding_report": str(run.path / sharding_lib.JSON_NAME),
    }
    if jax.process_index() == 0:
        run.write_summary(summary)
    return summary
