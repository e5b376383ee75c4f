"""The one supervised time-to-quality loop.

    init_start   mesh, state, AOT compile of the train dispatches + eval step   (untimed)
    init_stop
    run_start    the clock starts (wall time); only now is the dataset touched
      block (MLPerf's block_start..block_stop): the dispatches of K steps (and one remainder
             dispatch) up to the next eval, with no device-to-host read inside it (a transfer
             guard enforces it); then one host read of every dispatch's metrics (NaN check;
             metrics.jsonl + TensorBoard, one block late)
      eval on device; eval_accuracy; stop at target ("success") or budget ("aborted")
    run_stop     the clock stops
    final checkpoint, summary.json                                               (untimed)

Words: a *dispatch* is one call of a compiled K-step executable; a *block* is MLPerf's, the
dispatches between two evals; waiting for the device is `block_until_ready` (JAX's name).

Every clock read follows `block_until_ready` (`tpubench.loops.clock`). SIGTERM saves a checkpoint
and returns "preempted" (`tpubench.loops.preemption`); rerunning with the same workdir resumes from
it, appending to the same MLPerf log, and the clock, never paused, runs from the first attempt's
run_start to the final run_stop (docs/timing.md).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import jax
import ml_collections
import numpy as np

from tpubench import division, evaluation, registry
from tpubench import mesh as mesh_lib
from tpubench.errors import UsageError
from tpubench.loops import checkpoint, preemption
from tpubench.loops import engine as engine_lib
from tpubench.loops import feed as data
from tpubench.loops.cadence import Cadence, block_first_epoch, epochs_trained
from tpubench.loops.clock import Clock, Stopwatch, now_unix
from tpubench.loops.profiling import StepProfiler
from tpubench.loops.progress import Progress
from tpubench.loops.writers import RunMetrics
from tpubench.mlperf import mllog as mllog_lib
from tpubench.mlperf.mllog import constants
from tpubench.mlperf.results import RunDir
from tpubench.platform import chips, page_cache, perf
from tpubench.platform import sharding_report as sharding_lib
from tpubench.workload import Workload

jax.config.update("jax_threefry_partitionable", True)

PREEMPTED_KEY = "tpubench_preempted"
RESUME_KEY = "tpubench_resume"


class Diverged(RuntimeError):
    """The loss became NaN or Inf."""


def _log_header(log: mllog_lib.RunLogger, workload: Workload, platform: str) -> None:
    c = workload.config
    log.event(constants.SUBMISSION_ORG, c.submission.org)
    suffix = "" if c.is_mlperf else f"-{c.config_name}-{c.data.dataset}"
    log.event(constants.SUBMISSION_PLATFORM, (c.submission.platform or platform) + suffix)
    log.event(constants.SUBMISSION_DIVISION, c.submission.division)
    log.event(constants.SUBMISSION_STATUS, c.submission.status)
    log.event(constants.SUBMISSION_BENCHMARK, workload.mlperf_name)


def _evaluate(workload: Workload, eng, compiled, state, source: str
              ) -> tuple[float | dict[str, float], float]:
    """(quality, seconds): every eval batch dispatched, then one host read of all outputs."""
    c = workload.config
    watch = Stopwatch()
    n = -(-workload.eval_samples // c.eval.batch_size)
    pi, pc = jax.process_index(), jax.process_count()
    if source == "synthetic":
        batches = data.synthetic_eval_batches(workload, n, pc, pi)
    else:
        batches = data.fixed_eval_batches(workload.eval_batches(pi, pc), n)
    outputs = [compiled.eval(state, eng.put(batch, stacked=False)) for batch in batches]
    quality = evaluation.quality(workload, eng.eval_to_host(outputs))
    return quality, watch.stop()


def _shown(x) -> str:
    """A quality (a float or a dict of them) or a target, for the progress line."""
    if hasattr(x, "thresholds"):
        return (" and ".join(f"{k} {v}" for k, v in x.thresholds) if x.thresholds
                else str(x.value))
    if isinstance(x, dict):
        return " ".join(f"{k} {v:.4f}" for k, v in x.items())
    return f"{x:.4f}"


def _read_block_metrics(dispatch_metrics: list[dict[str, jax.Array]], step: int
                        ) -> list[dict[str, np.ndarray]]:
    """One host read of every dispatch's metrics at the end of a block (after its stopwatch
    waited for them, so the read never stalls); stops on NaN/Inf."""
    host = jax.device_get(dispatch_metrics)
    for m in host:
        if not bool(np.all(np.asarray(m["finite"]))):
            last = float(np.asarray(m["last_loss"]).reshape(-1)[0])
            raise Diverged(
                f"The training loss became NaN/Inf in the block ending at step {step} (last "
                f"loss {last}). Lower the learning rate or check the input data; the run is "
                "stopped and marked aborted."
            )
    return host


@dataclasses.dataclass
class RunContext:
    """What one attempt of a run works with, fixed once init is done."""

    workload: Workload
    run: RunDir
    log: mllog_lib.RunLogger
    mesh: jax.sharding.Mesh
    cadence: Cadence
    source: str  # config.data.source
    platform: str
    resumed: bool
    engine: Any = None  # engine_lib.JitEngine | engine_lib.PmapEngine
    compiled: engine_lib.Compiled | None = None
    manager: Any = None  # orbax CheckpointManager
    metrics: RunMetrics | None = None
    profiler: StepProfiler | None = None
    progress: Progress | None = None

    @property
    def config(self) -> ml_collections.ConfigDict:
        return self.workload.config


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How the timed region ended."""

    status: str  # "success" | "aborted"
    error: str | None
    quality: float
    step: int
    run_s: float


def train_and_evaluate(config: ml_collections.ConfigDict, workdir) -> dict:
    """Run `config`'s workload to its target (or budget) in `workdir`; returns the summary."""
    preemption.set_phase(preemption.INIT)
    # ---- validate everything before any compute ------------------------------------------------
    if config.run.get("profile_steps", 0) and config.get("is_mlperf", False):
        division.apply(config, ["profile_steps"], True)  # a config built without config.load
    workload = registry.create(config)
    if workload.loop == "generations":  # self-play reinforcement learning (MiniGo)
        from tpubench.loops import selfplay as generations
        return generations.train_and_evaluate(workload, workdir)
    run = RunDir(workdir)
    run.check_not_finished()
    source = config.data.source
    workload.check_data()  # synthetic too: its model-side checks (start checkpoints, sizes)
    mesh = mesh_lib.build_mesh(config)
    mesh_lib.check_batch(config.data.global_batch_size, mesh)
    mesh_lib.check_batch(config.eval.batch_size, mesh, "eval.batch_size")
    if workload.eval_samples <= 0:
        raise UsageError(
            f"{workload.name}/{config.config_name}: eval.samples is {workload.eval_samples}, so "
            "an eval would have nothing to measure. With data.source=synthetic set "
            "--config.eval.samples=N (e.g. one eval batch); real data sets count it themselves.")
    cadence = Cadence.from_config(config, workload.train_samples)
    start_step = checkpoint.latest_step(workdir)
    if jax.process_index() == 0:
        run.prepare(resumed=start_step is not None)
    log = mllog_lib.RunLogger(run.log_path, enabled=jax.process_index() == 0)
    ctx = RunContext(workload, run, log, mesh, cadence, source,
                     chips.platform_name(jax.devices()), resumed=start_step is not None)
    try:
        return _run(ctx, start_step or 0)
    finally:
        log.close()
        if ctx.metrics is not None:
            ctx.metrics.close()
        if ctx.profiler is not None:
            ctx.profiler.stop()
        preemption.reset()


def _dispatch_sizes(cadence: Cadence, step: int) -> Iterator[int]:
    """Every dispatch's size from `step` to the budget (what the input feed stacks)."""
    for stop in cadence.eval_steps:
        if stop > step:
            yield from cadence.dispatches(step, stop)
            step = stop


def _dispatch_end_steps(cadence: Cadence, step: int) -> Iterator[int]:
    """The step each dispatch from `step` to the budget ends on (a metrics record each)."""
    for size in _dispatch_sizes(cadence, step):
        step += size
        yield step


def _run(ctx: RunContext, step: int) -> dict:
    """Init (untimed unless resuming), then the loop. `step`: the restored checkpoint's step (no
    device read of the state), 0 for a fresh run."""
    c, log, cadence = ctx.config, ctx.log, ctx.cadence
    t_init = time.perf_counter()
    cleared = False
    if not ctx.resumed:
        cleared = bool(c.run.clear_page_cache) and page_cache.drop()
        log.event(constants.CACHE_CLEAR, cleared)
        log.start(constants.INIT_START)
        _log_header(log, ctx.workload, ctx.platform)
    remainders = cadence.remainder_sizes(step)
    if c.eval.get("target_provisional", False):
        _say(f"[{ctx.workload.name}/{c.config_name}] note: this config's target is provisional: "
             "not every measured run has reached it (the config's docstring says which)")
    _say(f"[{ctx.workload.name}/{c.config_name}] init: mesh {dict(ctx.mesh.shape)}, "
         f"{c.run.parallelism}; compiling the train dispatch (K={cadence.steps_per_dispatch} steps"
         + (f"; and {len(remainders)} remainder size(s) {list(remainders)}" if remainders else "")
         + ") and the eval step...")
    ctx.engine = engine_lib.create(ctx.workload, ctx.mesh)
    sharding_lib.write(ctx.run.path, ctx.engine)
    ctx.compiled = ctx.engine.compile(cadence.steps_per_dispatch,
                                      synthetic=ctx.source == "synthetic",
                                      other_sizes=remainders)
    ctx.manager = checkpoint.manager(ctx.run.path, keep=c.run.checkpoint_keep)
    if ctx.resumed:
        state, progress = checkpoint.restore(ctx.manager, ctx.engine.abstract_state,
                                             ctx.engine.state_shardings)
        state = ctx.engine.from_checkpoint(state)
    else:
        state = ctx.engine.init_state(c.run.seed)
        progress = Progress(cache_clear=cleared)
        for key, value in ctx.workload.mllog_hyperparameters().items():
            value, metadata = value if isinstance(value, tuple) else (value, None)
            log.event(key, value, metadata=metadata)
        log.event(constants.TRAIN_SAMPLES, ctx.workload.train_samples)
        log.event(constants.EVAL_SAMPLES, ctx.workload.eval_samples)
    writer = jax.process_index() == 0
    ctx.metrics = RunMetrics(ctx.run.path, ctx.workload, _dispatch_end_steps(cadence, step),
                             enabled=writer)
    ctx.profiler = StepProfiler(ctx.run.path, c.run.get("profile_steps", 0), enabled=writer)
    progress.attempts += 1
    preemption.check_before_run()
    jax.block_until_ready(state)
    init_s = time.perf_counter() - t_init
    if ctx.resumed:
        # On the clock (it never pauses): the outage and this re-init count.
        log.event(RESUME_KEY, progress.attempts, metadata={"step": step})
        preemption.set_phase(preemption.RUN)
    else:
        progress.init_s = init_s
        log.end(constants.INIT_STOP)
        preemption.set_phase(preemption.RUN)
        progress.run_start_unix = now_unix()
        log.start(constants.RUN_START, time_ms=round(progress.run_start_unix * 1000))
    _say(f"[{ctx.workload.name}/{c.config_name}] init: done in {init_s:.1f} s"
         + (f" (resumed at step {step}; the clock kept running)" if ctx.resumed
            else "; the clock starts (run_start)"))
    return _loop(ctx, state, progress, Clock(progress.run_start_unix), step)


def _eval_owed(progress: Progress, cadence: Cadence, step: int, gbs: int) -> bool:
    """True when `step` is an eval step whose eval has not run: a preemption that landed on the
    block's last dispatch saved the checkpoint before the eval, so the resumed run owes it."""
    done = progress.history[-1]["samples"] if progress.history else 0
    return step in cadence.eval_steps and done < step * gbs


@dataclasses.dataclass
class _Block:
    """What one training block left: the state, the step and dispatch count it reached, and
    whether SIGTERM stopped it."""

    state: Any
    step: int
    dispatch: int
    preempted: bool


def _train_block(ctx: RunContext, state, step: int, dispatch: int, feed, preempt,
                 cpu_wait: bool) -> _Block:
    """The dispatches from `step` to the next eval (MLPerf's block), with no device-to-host read
    inside it; then one host read of every dispatch's metrics (unless preempted)."""
    c, log, cadence, compiled = ctx.config, ctx.log, ctx.cadence, ctx.compiled
    gbs, ts = c.data.global_batch_size, ctx.workload.train_samples
    stop = cadence.next_eval(step)
    first = block_first_epoch(step * gbs, ts)
    log.start(constants.BLOCK_START, metadata={
        "first_epoch_num": first,
        "epoch_count": max(epochs_trained((stop - step) * gbs, ts), 1e-4)})
    watch, preempted, block_start_step = Stopwatch(), False, step
    dispatch_metrics: list[dict[str, jax.Array]] = []
    end_steps: list[int] = []
    with jax.transfer_guard_device_to_host("disallow"):
        for size in cadence.dispatches(step, stop):
            fn = compiled.dispatch(size)
            ctx.profiler.before_dispatch()
            state, metrics = fn(state) if feed is None else fn(state, next(feed))
            ctx.profiler.after_dispatch(size, metrics)
            step, dispatch = step + size, dispatch + 1
            dispatch_metrics.append(metrics)
            end_steps.append(step)
            if cpu_wait:
                jax.block_until_ready(metrics)
            elif len(dispatch_metrics) > 1:
                jax.block_until_ready(dispatch_metrics[-2])
            if preempt.reached(dispatch):
                preempted = True
                break
    block_s = watch.stop(state)
    ctx.progress.train_s += block_s
    try:
        host_metrics = (jax.device_get(dispatch_metrics) if preempted
                        else _read_block_metrics(dispatch_metrics, step))
    except Diverged as e:
        e.state = state  # the caller's state was donated to this block's first dispatch
        raise
    ctx.metrics.train_block(list(zip(end_steps, host_metrics, strict=True)),
                            (step - block_start_step) * gbs / block_s)
    if step == stop:  # complete (SIGTERM may have come at its last dispatch)
        log.end(constants.BLOCK_STOP, metadata={"first_epoch_num": first})
    return _Block(state, step, dispatch, preempted)


def _loop(ctx: RunContext, state, progress: Progress, clock: Clock, step: int) -> dict:
    workload, c, log, cadence = ctx.workload, ctx.config, ctx.log, ctx.cadence
    eng, compiled = ctx.engine, ctx.compiled
    gbs, kdisp, ts = c.data.global_batch_size, cadence.steps_per_dispatch, workload.train_samples
    ctx.progress = progress
    # Back-pressure without reading the device: wait (block_until_ready) for the dispatch before
    # the previous one, so at most two are queued; simulated CPU devices need a tighter bound.
    cpu_wait = jax.devices()[0].platform == "cpu" and 2 * kdisp > c.run.cpu_max_steps_in_flight
    pi, pc = jax.process_index(), jax.process_count()
    feed = None
    if ctx.source != "synthetic":
        watch = Stopwatch()  # opening (in-memory sources: reading) the dataset, on the clock
        stacked = data.stack_blocks(workload.train_batches(step, pi, pc),
                                    _dispatch_sizes(cadence, step))
        feed = data.Prefetcher(stacked, lambda b: eng.put(b, stacked=True))
        progress.input_start_s += watch.stop()
    status, error, quality, dispatch = "aborted", None, float("nan"), 0
    with preemption.Flag(pc) as preempt, eng.context():
        try:
            while True:
                if not _eval_owed(progress, cadence, step, gbs):
                    block = _train_block(ctx, state, step, dispatch, feed, preempt, cpu_wait)
                    state, step, dispatch = block.state, block.step, block.dispatch
                    if block.preempted:
                        return _preempt(ctx, state, progress, clock, step)
                epoch = epochs_trained(step * gbs, ts)
                log.start(constants.EVAL_START, metadata={"epoch_num": epoch})
                quality, eval_s = _evaluate(workload, eng, compiled, state, ctx.source)
                progress.eval_s += eval_s
                log.end(constants.EVAL_STOP, metadata={"epoch_num": epoch})
                log.event(constants.EVAL_ACCURACY, quality, metadata={"epoch_num": epoch})
                ctx.metrics.eval(step, quality, eval_s)
                elapsed = clock.read(state)
                reached = workload.target.reached(quality)
                shown, target_shown = _shown(quality), _shown(workload.target)
                if isinstance(quality, dict):  # several metrics: the first is "quality"
                    progress.history.append({"elapsed_s": elapsed, "samples": step * gbs,
                                             "quality": workload.target.primary(quality),
                                             "qualities": quality})
                    quality = workload.target.primary(quality)
                else:
                    progress.history.append(
                        {"elapsed_s": elapsed, "samples": step * gbs, "quality": quality})
                _say(f"[{workload.name}/{c.config_name}] step {step} epoch {epoch}: "
                     f"{workload.target.metric} {shown} (target {target_shown}) "
                     f"at {elapsed:.1f} s")
                if reached:
                    status = "success"
                    break
                if step >= cadence.max_steps or (c.run.max_time_s and elapsed > c.run.max_time_s):
                    break
                every = c.run.checkpoint_every_evals
                if every and len(progress.history) % every == 0:
                    _save(ctx, state, progress, step)
        except Diverged as e:
            error = str(e)
            state = getattr(e, "state", state)
        finally:
            if feed is not None:
                feed.close()
            ctx.profiler.stop(state)
    run_stop_unix = clock.read_unix(state)
    preemption.set_phase(preemption.FINISH)
    log.end(constants.RUN_STOP, metadata={"status": status},
            time_ms=round(run_stop_unix * 1000))
    run_s = run_stop_unix - progress.run_start_unix
    # ---- untimed from here -------------------------------------------------------------------
    _save(ctx, state, progress, step)
    ctx.manager.close()
    return _summarize(ctx, progress, Outcome(status, error, quality, step, run_s))


def _say(message: str) -> None:
    if jax.process_index() == 0:
        print(message, flush=True)


def _save(ctx: RunContext, state, progress: Progress, step: int) -> None:
    checkpoint.save(ctx.manager, step, ctx.engine.for_checkpoint(state), progress)


def _preempt(ctx: RunContext, state, progress: Progress, clock: Clock, step: int) -> dict:
    elapsed = clock.read(state)
    preemption.set_phase(preemption.FINISH)
    ctx.profiler.stop(state)
    _save(ctx, state, progress, step)
    ctx.manager.close()
    ctx.log.event(PREEMPTED_KEY, step, metadata={"attempt": progress.attempts,
                                                 "elapsed_s": round(elapsed, 3)})
    _say(f"Preempted at step {step} ({elapsed:.1f} s on the clock): checkpoint saved. Rerun the "
         "same command to resume; the clock keeps running meanwhile (MLPerf never pauses it).")
    return {"status": "preempted", "step": step, "workdir": str(ctx.run.path),
            "attempts": progress.attempts}


def _finite_or_none(x: float) -> float | None:
    """NaN (an MFU above 100%, flagged by perf.mfu) becomes null: summary.json stays strict JSON."""
    return None if x != x else x


def _summarize(ctx: RunContext, progress: Progress, outcome: Outcome) -> dict:
    c, workload, step, run_s = ctx.config, ctx.workload, outcome.step, outcome.run_s
    train_s, eval_s = progress.train_s, progress.eval_s
    samples = step * c.data.global_batch_size
    peak = perf.peak_flops(jax.devices(), c.model.dtype)
    flops = ctx.compiled.flops_per_step
    summary = {
        "workload": workload.name,
        "config": c.config_name,
        "dataset": c.data.dataset,
        "data_source": c.data.source,
        "is_mlperf": bool(c.is_mlperf),
        "division": c.submission.division,
        "open_reasons": list(c.submission.get("open_reasons", ()) or ()),
        "status": outcome.status,
        "error": outcome.error,
        "target": workload.target.value,
        "target_metric": workload.target.metric,
        "target_provisional": bool(c.eval.get("target_provisional", False)),
        "final_quality": outcome.quality,
        "time_to_target_s": run_s if outcome.status == "success" else None,
        "run_time_s": run_s,
        "run_start_unix": progress.run_start_unix,
        "init_s": progress.init_s,
        "train_s": train_s,
        "eval_s": eval_s,
        # On the clock but neither training nor eval: input start-up (input_start_s: opening
        # the dataset; the in-memory minis read it here), host work between blocks (metrics,
        # logs), checkpoints on the eval cadence, and for resumed runs the outage and re-init.
        "other_s": run_s - train_s - eval_s,
        "input_start_s": progress.input_start_s,
        "train_examples_per_s": samples / train_s if train_s else 0.0,
        "flops_per_step": flops,
        "mfu": _finite_or_none(perf.mfu(flops, step, train_s, peak)),
        "peak_flops": peak,
        "steps": step,
        "samples": samples,
        "seed": c.run.seed,
        "resumed": bool(ctx.resumed),
        "attempts": progress.attempts,
        "cache_clear": bool(progress.cache_clear),
        "platform": ctx.platform,
        "process_count": jax.process_count(),
        "parallelism": c.run.parallelism,
        "mesh": dict(ctx.mesh.shape),
        "global_batch_size": c.data.global_batch_size,
        "quality_history": progress.history,
        "mlperf_log": str(ctx.run.log_path),
        "metrics": ctx.metrics.files(),
        "profile": ctx.profiler.files(),
        "jax_version": jax.__version__,
        "sharding_report": str(ctx.run.path / sharding_lib.JSON_NAME),
    }
    if jax.process_index() == 0:
        ctx.run.write_summary(summary)
    return summary
