"""The one supervised time-to-quality loop.

    init_start   mesh, state, AOT compile of the train dispatches + eval step   (untimed)
    init_stop
    run_start    the clock starts (wall time); only now is the dataset touched
      block (MLPerf's block_start..block_stop): the dispatches of K steps (and one remainder
             dispatch) up to the next eval, with no device-to-host read inside it (a transfer
             guard enforces it, but for one dispatch's loss read one dispatch late when a
             progress line is due); then one host read of every dispatch's metrics (NaN check;
             metrics.jsonl + TensorBoard at each dispatch's own wall time, one block late)
      eval on device; eval_accuracy; stop at target ("success") or budget ("aborted")
    run_stop     the clock stops
    final checkpoint, summary.json                                               (untimed)

Words: a *dispatch* is one call of a compiled K-step executable; a *block* is MLPerf's, the
dispatches between two evals; waiting for the device is `block_until_ready` (JAX's name).

Every clock read follows `block_until_ready` (`tpubench.loops.clock`). SIGTERM saves a checkpoint
and returns "preempted" (`tpubench.loops.preemption`); rerunning with the same workdir resumes from
it, appending to the same MLPerf log, and the clock, never paused, runs from the first attempt's
run_start to the final run_stop (docs/timing.md).

The run sequence around the loop (init_start .. run_stop, resume, summary.json) is
`tpubench.loops.lifecycle`'s, shared with the self-play loop; `tpubench.loops.run` picks the loop
for a workload.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import jax
import ml_collections
import numpy as np

from tpubench import evaluation
from tpubench import mesh as mesh_lib
from tpubench.errors import UsageError
from tpubench.loops import checkpoint, lifecycle, preemption
from tpubench.loops import engine as engine_lib
from tpubench.loops import feed as data
from tpubench.loops.cadence import Cadence, block_first_epoch, epochs_trained
from tpubench.loops.clock import Clock, Stopwatch
from tpubench.loops.lifecycle import Attempt, Outcome, say
from tpubench.loops.profiling import StepProfiler
from tpubench.loops.progress import Progress
from tpubench.loops.reporter import Reporter
from tpubench.loops.writers import RunMetrics
from tpubench.mlperf import mllog as mllog_lib
from tpubench.mlperf.mllog import constants
from tpubench.mlperf.results import RunDir
from tpubench.platform import perf
from tpubench.platform import sharding_report as sharding_lib
from tpubench.platform.heartbeat import heartbeat
from tpubench.workload import Workload

jax.config.update("jax_threefry_partitionable", True)


class Diverged(RuntimeError):
    """The loss became NaN or Inf."""


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

    attempt: Attempt  # the workload, the run directory, the log, the writers
    mesh: jax.sharding.Mesh
    cadence: Cadence
    source: str  # config.data.source
    engine: Any = None  # engine_lib.JitEngine | engine_lib.PmapEngine
    compiled: engine_lib.Compiled | None = None
    manager: Any = None  # orbax CheckpointManager
    profiler: StepProfiler | None = None
    progress: Progress | None = None
    reporter: Reporter | None = None

    @property
    def workload(self) -> Workload:
        return self.attempt.workload

    @property
    def config(self) -> ml_collections.ConfigDict:
        return self.attempt.config

    @property
    def run(self) -> RunDir:
        return self.attempt.run

    @property
    def log(self) -> mllog_lib.RunLogger:
        return self.attempt.log

    @property
    def resumed(self) -> bool:
        return self.attempt.resumed

    @property
    def metrics(self) -> RunMetrics | None:
        return self.attempt.metrics


def train_and_evaluate(config: ml_collections.ConfigDict, workdir) -> dict:
    """Run `config`'s workload, a supervised one, to its target (or budget) in `workdir`;
    returns the summary. `tpubench.loops.run.train_and_evaluate` runs any workload."""
    workload = lifecycle.create_workload(config)
    if workload.loop == "generations":
        raise UsageError(
            f"{workload.name} trains by the {workload.loop!r} loop, not the supervised one: "
            "run it with tpubench.loops.run.train_and_evaluate (what `tpubench run` calls).")
    return train_workload(workload, workdir)


def train_workload(workload: Workload, workdir) -> dict:
    """The supervised loop for `workload` (made by `lifecycle.create_workload`) in `workdir`."""
    config = workload.config
    # ---- validate everything before any compute ------------------------------------------------
    run = RunDir(workdir)
    lifecycle.check_workdir(workload, run)
    checkpoint.check_keep(config)
    source = config.data.source
    lifecycle.check_closed(workload)
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
    ctx = RunContext(Attempt.open(workload, run, resumed=start_step is not None),
                     mesh, cadence, source)
    try:
        return _run(ctx, start_step or 0)
    except checkpoint.NoUsableCheckpoint:
        pass  # every checkpoint set aside (stderr said so): a new attempt, below
    finally:
        if ctx.profiler is not None:
            ctx.profiler.stop()
        ctx.attempt.close()
    return train_workload(workload, workdir)


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
    c, cadence = ctx.config, ctx.cadence
    ctx.attempt.begin_init()
    remainders = cadence.remainder_sizes(step)
    if c.eval.get("target_provisional", False):
        say(f"[{ctx.workload.name}/{c.config_name}] note: this config's target is provisional: "
            "not every measured run has reached it (the config's docstring says which)")
    say(f"[{ctx.workload.name}/{c.config_name}] init: mesh {dict(ctx.mesh.shape)}, "
        f"{c.run.parallelism}; compiling the train dispatch (K={cadence.steps_per_dispatch} steps"
        + (f"; and {len(remainders)} remainder size(s) {list(remainders)}" if remainders else "")
        + ") and the eval step...")
    ctx.engine = engine_lib.create(ctx.workload, ctx.mesh)
    sharding_lib.write(ctx.run.path, ctx.engine)
    ctx.manager = checkpoint.manager(ctx.run.path, keep=c.run.checkpoint_keep)
    if ctx.resumed:  # before the compile: a damaged newest checkpoint moves `step` back
        state, progress, step = checkpoint.restore_usable(
            ctx.manager, ctx.engine.abstract_state, ctx.engine.state_shardings)
        state = ctx.engine.from_checkpoint(state)
        remainders = cadence.remainder_sizes(step)
    with heartbeat(f"[{ctx.workload.name}/{c.config_name}] init: compiling",
                   max(1.0, c.run.progress_every_s), enabled=jax.process_index() == 0):
        ctx.compiled = ctx.engine.compile(cadence.steps_per_dispatch,
                                          synthetic=ctx.source == "synthetic",
                                          other_sizes=remainders)
    if not ctx.resumed:
        state = ctx.engine.init_state(c.run.seed)
        progress = ctx.attempt.new_progress()
    writer = jax.process_index() == 0
    ctx.attempt.metrics = RunMetrics(ctx.run.path, ctx.workload,
                                     _dispatch_end_steps(cadence, step), enabled=writer)
    ctx.profiler = StepProfiler(ctx.run.path, c.run.get("profile_steps", 0), enabled=writer)
    init_s = ctx.attempt.start_run(progress, state, step)
    say(f"[{ctx.workload.name}/{c.config_name}] init: done in {init_s:.1f} s"
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
    loss: float | None = None  # the last dispatch's (None when preempted)
    examples_per_s: float = 0.0


def _train_block(ctx: RunContext, state, step: int, dispatch: int, feed, preempt,
                 cpu_wait: bool) -> _Block:
    """The dispatches from `step` to the next eval (MLPerf's block), with no device-to-host read
    inside it but one dispatch's loss when a progress line is due (of the dispatch just waited
    for, so the read never stalls); then one host read of every dispatch's metrics (unless
    preempted)."""
    c, log, cadence, compiled = ctx.config, ctx.log, ctx.cadence, ctx.compiled
    reporter = ctx.reporter
    gbs, ts = c.data.global_batch_size, ctx.workload.train_samples
    stop = cadence.next_eval(step)
    first = block_first_epoch(step * gbs, ts)
    log.start(constants.BLOCK_START, metadata={
        "first_epoch_num": first,
        "epoch_count": max(epochs_trained((stop - step) * gbs, ts), 1e-4)})
    watch, preempted, block_start_step = Stopwatch(), False, step
    dispatch_metrics: list[dict[str, jax.Array]] = []
    end_steps: list[int] = []
    walls: list[float] = []  # host time each dispatch's metrics were seen ready
    reporter.block_start(step)
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
            ready = len(dispatch_metrics) - (1 if cpu_wait else 2)
            if ready == len(walls):  # dispatch `ready` was just waited for
                walls.append(time.time())
                reporter.reached(end_steps[ready])
                if reporter.due():
                    reporter.train_line(end_steps[ready], _read_loss(dispatch_metrics[ready]),
                                        walls[ready], stop)
            if preempt.reached(dispatch):
                preempted = True
                break
    block_s = watch.stop(state)
    walls.extend([time.time()] * (len(dispatch_metrics) - len(walls)))  # the last one
    reporter.reached(step)
    ctx.progress.train_s += block_s
    try:
        host_metrics = (jax.device_get(dispatch_metrics) if preempted
                        else _read_block_metrics(dispatch_metrics, step))
    except Diverged as e:
        e.state = state  # the caller's state was donated to this block's first dispatch
        raise
    examples_per_s = (step - block_start_step) * gbs / block_s
    ctx.metrics.train_block(list(zip(end_steps, host_metrics, strict=True)), examples_per_s,
                            walls)
    if step == stop:  # complete (SIGTERM may have come at its last dispatch)
        log.end(constants.BLOCK_STOP, metadata={"first_epoch_num": first})
    loss = None if preempted or not host_metrics else _host_scalar(host_metrics[-1]["loss"])
    return _Block(state, step, dispatch, preempted, loss, examples_per_s)


def _host_scalar(value) -> float:
    """A dispatch metric on the host: a scalar, or (pmap) one equal copy per device."""
    return float(np.ravel(np.asarray(value))[0])


def _read_loss(metrics: dict[str, jax.Array]) -> float:
    """A dispatch's mean loss, read from the device for a progress line: only for a dispatch
    the loop has just waited for (ready, so the read does not stall), and the only read the block's
    transfer guard lets through."""
    with jax.transfer_guard_device_to_host("allow"):
        return _host_scalar(jax.device_get(metrics["loss"]))


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
    reporter = ctx.reporter = Reporter(
        f"[{workload.name}/{c.config_name}]", c.run.progress_every_s, gbs, ts,
        cadence.eval_steps, c.run.max_time_s, progress.run_start_unix, step,
        enabled=pi == 0)
    block = None
    with preemption.Flag(pc) as preempt, eng.context():
        try:
            while True:
                if not _eval_owed(progress, cadence, step, gbs):
                    block = _train_block(ctx, state, step, dispatch, feed, preempt, cpu_wait)
                    state, step, dispatch = block.state, block.step, block.dispatch
                    if block.preempted:
                        reporter.close()
                        return _preempt(ctx, state, progress, clock, step)
                epoch = epochs_trained(step * gbs, ts)
                log.start(constants.EVAL_START, metadata={"epoch_num": epoch})
                quality, eval_s = _evaluate(workload, eng, compiled, state, ctx.source)
                progress.eval_s += eval_s
                reporter.eval_s_mean = progress.eval_s / (len(progress.history) + 1)
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
                figures = "" if block is None else "; " + reporter.eval_figures(
                    step, block.loss, block.examples_per_s, elapsed)
                reporter.say(f"[{workload.name}/{c.config_name}] step {step} epoch {epoch}: "
                             f"{workload.target.metric} {shown} (target {target_shown}) "
                             f"at {elapsed:.1f} s{figures}")
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
            reporter.close()
            if feed is not None:
                feed.close()
            ctx.profiler.stop(state)
    run_s = ctx.attempt.stop_run(status, clock, state, progress)
    # ---- untimed from here -------------------------------------------------------------------
    _save(ctx, state, progress, step)
    ctx.manager.close()
    return _summarize(ctx, progress, Outcome(status, quality, step, run_s, error))


def _save(ctx: RunContext, state, progress: Progress, step: int) -> None:
    checkpoint.save(ctx.manager, step, ctx.engine.for_checkpoint(state), progress)


def _preempt(ctx: RunContext, state, progress: Progress, clock: Clock, step: int) -> dict:
    elapsed = clock.read(state)
    preemption.set_phase(preemption.FINISH)
    ctx.profiler.stop(state)
    _save(ctx, state, progress, step)
    ctx.manager.close()
    result = ctx.attempt.preempted(progress, step, elapsed)
    say(f"Preempted at step {step} ({elapsed:.1f} s on the clock): checkpoint saved. Rerun the "
        "same command to resume; the clock keeps running meanwhile (MLPerf never pauses it).")
    return result


def _finite_or_none(x: float) -> float | None:
    """NaN (an MFU above 100%, flagged by perf.mfu) becomes null: summary.json stays strict JSON."""
    return None if x != x else x


def _summarize(ctx: RunContext, progress: Progress, outcome: Outcome) -> dict:
    """summary.json: the lifecycle's keys and the supervised loop's own (data, throughput,
    FLOPs, the mesh, the profile and sharding report)."""
    c, step, train_s = ctx.config, outcome.steps, progress.train_s
    samples = step * c.data.global_batch_size
    peak = perf.peak_flops(jax.devices(), c.model.dtype)
    flops = ctx.compiled.flops_per_step
    return ctx.attempt.summarize(progress, outcome, {
        "data_source": c.data.source,
        # A part of other_s: opening the dataset (the in-memory minis read it here).
        "input_start_s": progress.input_start_s,
        "train_examples_per_s": samples / train_s if train_s else 0.0,
        "flops_per_step": flops,
        "mfu": _finite_or_none(perf.mfu(flops, step, train_s, peak)),
        "peak_flops": peak,
        "samples": samples,
        "parallelism": c.run.parallelism,
        "mesh": dict(ctx.mesh.shape),
        "profile": ctx.profiler.files(),
        "sharding_report": str(ctx.run.path / sharding_lib.JSON_NAME),
    })
