"""The MLPerf run sequence, written once for both loops (`tpubench.loops.supervised`,
`tpubench.loops.selfplay`): what happens around the loop, in this order.

    create_workload(config)     phase init; a profiled MLPerf config leaves closed division
    check_workdir(workload, run)  before any compute: a run of another config, or a finished
                                run, in the workdir is refused (`tpubench.loops.provenance`)
    Attempt.open(...)           the run directory (a resumed run appends to its log), the log,
                                provenance.json (this attempt's command, code, versions, host)
    attempt.begin_init()        fresh run: page-cache clear, cache_clear, init_start, the header
      ... the loop's init: compile, state, restore ...
    attempt.new_progress()      fresh run: the hyperparameters, train_samples, eval_samples
    attempt.start_run(...)      fresh run: init_stop, run_start (the clock starts); resumed run:
                                tpubench_resume (the clock kept running: docs/timing.md)
      ... the loop: blocks, evals ...
    attempt.stop_run(...)       run_stop with its status (the clock stops); or, on SIGTERM,
    attempt.preempted(...)      tpubench_preempted (the rerun of the same command resumes)
    attempt.summarize(...)      summary.json, from the typed `Outcome` and the loop's own keys
    attempt.close()             the log and the metric writers closed, the phase reset

A loop owns what differs: its init, its blocks and evals, its checkpoints and its progress lines.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

import jax
import ml_collections

from tpubench import division, registry
from tpubench.errors import UsageError
from tpubench.loops import preemption, provenance
from tpubench.loops.clock import Clock, now_unix
from tpubench.loops.progress import Progress
from tpubench.loops.writers import ScalarWriters
from tpubench.mlperf import mllog as mllog_lib
from tpubench.mlperf.mllog import PREEMPTED_KEY, RESUME_KEY, constants
from tpubench.mlperf.results import RunDir
from tpubench.platform import chips, page_cache
from tpubench.workload import Workload


def say(message: str) -> None:
    """Print a progress line (process 0 only)."""
    if jax.process_index() == 0:
        print(message, flush=True)


def create_workload(config: ml_collections.ConfigDict) -> Workload:
    """The config's workload, in the init phase (SIGTERM from here on starts the run over). A
    profiled MLPerf config built without `config.load` leaves closed division here."""
    preemption.set_phase(preemption.INIT)
    return build_workload(config)


def build_workload(config: ml_collections.ConfigDict) -> Workload:
    """The config's workload, its config as the run trains it (what provenance.json holds);
    no phase change (`create_workload` is the run's)."""
    if config.run.get("profile_steps", 0) and config.get("is_mlperf", False):
        division.apply(config, ["profile_steps"], True)
    return registry.create(config)


def log_header(log: mllog_lib.RunLogger, workload: Workload, platform: str) -> None:
    """The submission keys every MLPerf log opens with (a mini's platform names its config and
    data set, so its log is never mistaken for an MLPerf one)."""
    c = workload.config
    log.event(constants.SUBMISSION_ORG, c.submission.org)
    suffix = "" if c.is_mlperf else f"-{c.config_name}-{c.data.dataset}"
    log.event(constants.SUBMISSION_PLATFORM, (c.submission.platform or platform) + suffix)
    log.event(constants.SUBMISSION_DIVISION, c.submission.division)
    log.event(constants.SUBMISSION_STATUS, c.submission.status)
    log.event(constants.SUBMISSION_BENCHMARK, workload.mlperf_name)


def check_workdir(workload: Workload, run: RunDir) -> None:
    """`UsageError` when `run`'s directory holds a run of another config (each differing key
    named) or a finished run (results are never overwritten). Call before any compute."""
    provenance.check(workload.config, run.path)
    run.check_not_finished()


def check_closed(workload: Workload) -> None:
    """`UsageError` when a closed-division run (`is_mlperf`) lacks what the rules require
    (`Workload.closed_requirements`): one paragraph with each missing thing and the way to run
    the same config as open division instead. Call before any compute."""
    c = workload.config
    if not c.is_mlperf:
        return
    missing = workload.closed_requirements()
    if missing:
        raise UsageError(
            f"{workload.name}/{c.config_name} is a closed-division MLPerf config, and a closed "
            "run must start as the v0.7 reference does: " + " ".join(missing) + " To run it "
            "anyway as open division (not an MLPerf closed result), add "
            "--config.submission.division=open.")


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How the timed region ended: what the summary needs besides the config and `Progress`."""

    status: str  # "success" | "aborted"
    quality: float
    steps: int
    run_s: float
    error: str | None = None


@dataclasses.dataclass
class Attempt:
    """One process's attempt at a run in a workdir: the MLPerf log, the metric writers (set by
    the loop; only process 0 writes), and whether it resumes a checkpoint."""

    workload: Workload
    run: RunDir
    log: mllog_lib.RunLogger
    resumed: bool
    platform: str
    metrics: ScalarWriters | None = None
    cleared: bool = False  # the page cache really was flushed before init
    _t_init: float = 0.0

    @classmethod
    def open(cls, workload: Workload, run: RunDir, resumed: bool) -> Attempt:
        """Prepare `run` (process 0) and open its MLPerf log. Call after every check that can
        refuse the run, so that bad input writes nothing."""
        if jax.process_index() == 0:
            run.prepare(resumed=resumed)
            provenance.write(workload.config, run.path, resumed)
        log = mllog_lib.RunLogger(run.log_path, enabled=jax.process_index() == 0)
        return cls(workload, run, log, resumed, chips.platform_name(jax.devices()))

    @property
    def config(self) -> ml_collections.ConfigDict:
        """The workload's config."""
        return self.workload.config

    def begin_init(self) -> None:
        """Start init's stopwatch; a fresh run clears the page cache and logs cache_clear,
        init_start and the header (a resumed run's log already holds them)."""
        self._t_init = time.perf_counter()
        if self.resumed:
            return
        self.cleared = bool(self.config.run.clear_page_cache) and page_cache.drop()
        self.log.event(constants.CACHE_CLEAR, self.cleared)
        self.log.start(constants.INIT_START)
        log_header(self.log, self.workload, self.platform)

    def new_progress(self) -> Progress:
        """A fresh run's `Progress`, after logging the workload's hyperparameters and sample
        counts (inside init, as the reference logs them)."""
        for key, value in self.workload.mllog_hyperparameters().items():
            value, metadata = value if isinstance(value, tuple) else (value, None)
            self.log.event(key, value, metadata=metadata)
        self.log.event(constants.TRAIN_SAMPLES, self.workload.train_samples)
        self.log.event(constants.EVAL_SAMPLES, self.workload.eval_samples)
        return Progress(cache_clear=self.cleared)

    def start_run(self, progress: Progress, state: Any, step: int) -> float:
        """End init once `state` is computed and return its seconds: a fresh run logs init_stop
        and run_start (the clock's anchor, saved in `progress`); a resumed run logs
        tpubench_resume at `step`, on the clock (the outage and this re-init count)."""
        progress.attempts += 1
        preemption.check_before_run()
        jax.block_until_ready(state)
        init_s = time.perf_counter() - self._t_init
        if self.resumed:
            self.log.event(RESUME_KEY, progress.attempts, metadata={"step": step})
            preemption.set_phase(preemption.RUN)
        else:
            progress.init_s = init_s
            self.log.end(constants.INIT_STOP)
            preemption.set_phase(preemption.RUN)
            progress.run_start_unix = now_unix()
            self.log.start(constants.RUN_START, time_ms=round(progress.run_start_unix * 1000))
        return init_s

    def stop_run(self, status: str, clock: Clock, state: Any, progress: Progress) -> float:
        """run_stop with `status` once `state` is computed; the run's seconds on the clock.
        SIGTERM is ignored from here on (the final checkpoint and summary always complete)."""
        run_stop_unix = clock.read_unix(state)
        preemption.set_phase(preemption.FINISH)
        self.log.end(constants.RUN_STOP, metadata={"status": status},
                     time_ms=round(run_stop_unix * 1000))
        return run_stop_unix - progress.run_start_unix

    def preempted(self, progress: Progress, step: int, elapsed_s: float,
                  **where: int) -> dict[str, Any]:
        """Log tpubench_preempted (after the loop saved its checkpoint) and return the result a
        preempted run returns instead of a summary; `where`: the loop's own position keys."""
        self.log.event(PREEMPTED_KEY, step, metadata={
            "attempt": progress.attempts, **where, "elapsed_s": round(elapsed_s, 3)})
        return {"status": "preempted", **where, "step": step, "workdir": str(self.run.path),
                "attempts": progress.attempts}

    def summarize(self, progress: Progress, outcome: Outcome,
                  loop_keys: Mapping[str, Any]) -> dict[str, Any]:
        """summary.json (written by process 0) and the returned summary: the keys every run
        has, from the config, `progress` and `outcome`, then the loop's own `loop_keys`."""
        summary = build_summary(self, progress, outcome)
        summary.update(loop_keys)
        if jax.process_index() == 0:
            self.run.write_summary(summary)
        return summary

    def close(self) -> None:
        """Close the log and the writers; the next run in this process starts in init."""
        self.log.close()
        if self.metrics is not None:
            self.metrics.close()
        preemption.reset()


def build_summary(attempt: Attempt, progress: Progress, outcome: Outcome) -> dict[str, Any]:
    """The summary keys both loops write (summary.json sorts them)."""
    c, workload, run_s = attempt.config, attempt.workload, outcome.run_s
    return {
        "workload": workload.name,
        "config": c.config_name,
        "dataset": c.data.dataset,
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
        "train_s": progress.train_s,
        "eval_s": progress.eval_s,
        # On the clock but neither training nor eval: input start-up, host work between
        # blocks (metrics, logs), checkpoints, and for resumed runs the outage and re-init.
        "other_s": run_s - progress.train_s - progress.eval_s,
        "steps": outcome.steps,
        "seed": c.run.seed,
        "resumed": bool(attempt.resumed),
        "attempts": progress.attempts,
        "cache_clear": bool(progress.cache_clear),
        "platform": attempt.platform,
        "process_count": jax.process_count(),
        "global_batch_size": c.data.global_batch_size,
        "quality_history": progress.history,
        "mlperf_log": str(attempt.run.log_path),
        "metrics": attempt.metrics.files() if attempt.metrics is not None else None,
        "jax_version": jax.__version__,
    }


__all__ = ["Attempt", "Outcome", "build_summary", "build_workload", "check_workdir",
           "create_workload", "log_header", "say"]
