"""The generation loop: time-to-quality for reinforcement learning by self-play (MLPerf MiniGo).

    init_start   state, AOT compile of self-play, the train dispatch and the evaluation match,
                 the evaluation opponent started                                     (untimed)
    init_stop
    run_start    the clock starts
      generation g (MLPerf's block, first_epoch_num = g):
        self-play   `games_per_generation` games with the current network, on device
        train       `schedule.steps_per_generation` SGD steps on examples sampled from the last
                    `data.window_generations` generations (one dispatch, `lax.scan`)
      evaluation    games against the target; eval_accuracy = win rate (epoch_num = g)
      stop at the target win rate ("success") or at `run.max_generations` ("aborted")
    run_stop     the clock stops
    final checkpoint, summary.json                                                   (untimed)

Resume: every generation that does not end the run ends with a checkpoint (the harness's
`tpubench.loops.checkpoint`: train state and `Progress`, whose history holds the generation) and the
generation's valid examples in `<workdir>/replay/<generation>.npz` (the window is rebuilt from
the last `data.window_generations` files). The keys are drawn from the state's RNG and the
generation number, the window sampler is seeded by (seed, generation), so a rerun in the same
workdir after SIGTERM (`tpubench.loops.preemption`: the generation in flight finishes first) or a
kill continues exactly as the uninterrupted run would have, appending to the same log; the
clock never pauses (docs/timing.md), as in the supervised loop.

The v0.7 reference (mlcommons/training, reinforcement/tensorflow/minigo/ml_perf/
train_loop.py) runs the same cycle with separate processes: selfplay writes games, `train`
samples `train_filter` of the positions of the last `window_size` (5) generations into a golden
chunk and trains on it, then the new model is evaluated against the target.

The harness's pieces are reused, not copied: `tpubench.loops.steps` (train state, the train step
and the K-step dispatch), `tpubench.loops.clock`, `tpubench.loops.checkpoint`, the run sequence
and summary of `tpubench.loops.lifecycle` (the supervised loop's, so the two logs open and close
alike) and its metric writers (metrics.jsonl and TensorBoard, one record per generation). A
workload opts in with `loop = "generations"` (`tpubench.workload.Workload.loop`) by subclassing
`GenerationWorkload`; `tpubench.loops.run` sends it here.
"""

from __future__ import annotations

import abc
import collections
import os
import pathlib
from typing import Any, ClassVar

import jax
import numpy as np
from flax import linen as nn

from tpubench.errors import UsageError
from tpubench.loops import checkpoint, preemption, steps
from tpubench.loops.clock import Clock, Stopwatch
from tpubench.loops.lifecycle import Attempt, Outcome, check_closed, check_workdir, say
from tpubench.loops.progress import Progress
from tpubench.loops.reporter import duration
from tpubench.loops.writers import ScalarWriters
from tpubench.mlperf.mllog import constants
from tpubench.mlperf.results import RunDir
from tpubench.platform.heartbeat import heartbeat
from tpubench.workload import Workload

ACTUAL_GAMES_KEY = "actual_selfplay_games_per_generation"  # closed_minigo.yaml, AT_LEAST_ONE
EXAMPLE_KEYS = ("inputs", "policy", "outcome")
REPLAY_DIR = "replay"


class GenerationWorkload(Workload):
    """A workload trained by a loop of generations instead of a fixed data set.

    Besides the supervised contract's `model`/`loss`/`optimizer` (the train step is the
    harness's, on batches of `batch_spec(train=True)` drawn from self-play examples):
      selfplay(variables, rng)   pure: one generation's examples, flat [E, ...] arrays under the
                                 keys of the train batch, a bool `valid` [E] (positions after a
                                 game ended are False) and scalar game statistics
      games_per_generation       the games one `selfplay` call plays (MLPerf's
                                 actual_selfplay_games_per_generation)
      make_evaluator(like)       host, untimed: an object with `compile()` and
                                 `win_rate(variables, rng) -> float` (the generation's quality)
    `variables` is the flax dict {"params": ..., **model_state}.
    """

    loop: ClassVar[str] = "generations"

    @abc.abstractmethod
    def selfplay(self, variables: Any, rng: jax.Array) -> dict[str, jax.Array]:
        """One generation of self-play (see the class docstring)."""

    @property
    @abc.abstractmethod
    def games_per_generation(self) -> int:
        """Games per `selfplay` call."""

    @abc.abstractmethod
    def make_evaluator(self, variables_like: Any) -> Any:
        """The evaluation match against the target (see the class docstring)."""

    @property
    def train_samples(self) -> int:
        """Examples trained on per generation (steps_per_generation x batch)."""
        c = self.config
        return int(c.schedule.steps_per_generation) * int(c.data.global_batch_size)

    @property
    def eval_samples(self) -> int:
        """Evaluation games per generation."""
        return int(self.config.eval.games)


def _variables(state: steps.TrainState) -> dict[str, Any]:
    return {"params": state.params, **state.model_state}


def _key(state: steps.TrainState, purpose: int, generation: int) -> jax.Array:
    """The key of a generation's self-play (purpose 0) or evaluation (1)."""
    return jax.random.fold_in(jax.random.fold_in(state.rng, purpose), generation)


class Window:
    """The valid examples of the last `generations` generations, on the host; with a `folder`,
    each generation's examples are also written there (`<generation>.npz`) for a resume, and
    `spare` older ones stay on disk: a resume from an older checkpoint (the newest damaged,
    `checkpoint.restore_usable`) finds its window too."""

    def __init__(self, generations: int, folder: pathlib.Path | None = None, spare: int = 0):
        self._gens: collections.deque = collections.deque(maxlen=max(int(generations), 1))
        self.folder = folder
        self.spare = int(spare)

    def add(self, examples: dict[str, np.ndarray]) -> int:
        valid = np.asarray(examples["valid"], bool)
        self._gens.append({k: np.asarray(examples[k])[valid] for k in EXAMPLE_KEYS})
        return int(valid.sum())

    def save(self, generation: int) -> None:
        """Write the newest generation's examples; drop the files that left the window."""
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f"{generation}.tmp.npz"
        np.savez(tmp, **self._gens[-1])
        os.replace(tmp, self.folder / f"{generation}.npz")  # a kill never leaves half a file
        for old in self.folder.glob("*.npz"):
            if old.stem.isdigit() and int(old.stem) <= generation - self._gens.maxlen - self.spare:
                old.unlink()

    def load(self, generation: int) -> None:
        """Refill the window with generations up to `generation` (a resume)."""
        for g in range(max(1, generation - self._gens.maxlen + 1), generation + 1):
            path = self.folder / f"{g}.npz"
            if not path.is_file():
                raise UsageError(
                    f"{path} is missing: the checkpoint of generation {generation} cannot be "
                    "resumed without the replay window it trained on. Start over in a new "
                    "--workdir.")
            with np.load(path) as data:
                self._gens.append({k: data[k] for k in EXAMPLE_KEYS})

    def __len__(self) -> int:
        return sum(len(g["outcome"]) for g in self._gens)

    def sample(self, rng: np.random.Generator, steps_: int, batch: int) -> dict[str, np.ndarray]:
        """[steps_, batch, ...] examples drawn uniformly (with replacement) from the window."""
        pooled = {k: np.concatenate([g[k] for g in self._gens]) for k in EXAMPLE_KEYS}
        idx = rng.integers(0, len(pooled["outcome"]), size=(steps_, batch))
        return {k: v[idx] for k, v in pooled.items()}


def train_and_evaluate(workload: GenerationWorkload, workdir) -> dict:
    """Run `workload` (made by `lifecycle.create_workload`) generation by generation to its
    target win rate (or budget); a workdir holding an unfinished run's checkpoint resumes it."""
    c = workload.config
    run = RunDir(workdir)
    check_workdir(workload, run)
    resumed = checkpoint.latest_step(workdir) is not None
    checkpoint.check_keep(c)
    if int(c.run.max_generations) < 1 or workload.games_per_generation < 1:
        raise UsageError(
            f"{workload.name}/{c.config_name}: run.max_generations and "
            "data.games_per_generation must be >= 1.")
    check_closed(workload)
    workload.check_data()
    attempt = Attempt.open(workload, run, resumed)
    attempt.metrics = ScalarWriters(run.path, enabled=jax.process_index() == 0)
    try:
        return _run(attempt)
    except checkpoint.NoUsableCheckpoint:
        pass  # every checkpoint set aside (stderr said so): a new attempt, below
    finally:
        attempt.close()
    return train_and_evaluate(workload, workdir)


def _restore(manager, state, window: Window) -> tuple[steps.TrainState, Progress, int]:
    """The checkpointed state and progress (onto the fresh state's shardings), the window
    refilled; returns the last finished generation."""
    shardings = jax.tree.map(lambda x: x.sharding, state)
    state, progress, _ = checkpoint.restore_usable(manager, jax.eval_shape(lambda: state),
                                                   shardings)
    generation = int(progress.history[-1]["generation"])
    window.load(generation)
    return state, progress, generation


def _run(attempt: Attempt) -> dict:
    workload, run, log, resumed = attempt.workload, attempt.run, attempt.log, attempt.resumed
    metrics = attempt.metrics
    c = workload.config
    attempt.begin_init()
    k, b = int(c.schedule.steps_per_generation), int(c.data.global_batch_size)
    say(f"[{workload.name}/{c.config_name}] init: compiling self-play "
        f"({workload.games_per_generation} games), the train dispatch ({k} steps of {b}) and "
        f"the evaluation match ({c.eval.games} games vs {c.eval.opponent})...")
    name = f"[{workload.name}/{c.config_name}]"
    # A sign of life every progress_every_s (at least 1 s) while the host waits on one long
    # call: the compiles here, a generation below (no line can be owed inside one: it is one
    # self-play call, one train dispatch and one evaluation match).
    every, lead = max(1.0, float(c.run.progress_every_s)), jax.process_index() == 0
    with heartbeat(f"{name} init: compiling", every, enabled=lead):
        state = nn.meta.unbox(
            jax.jit(steps.boxed_init_fn(workload))(jax.random.PRNGKey(c.run.seed)))
        spec = workload.batch_spec(b, train=True)
        stacked = {n: jax.ShapeDtypeStruct((k,) + s.shape, s.dtype) for n, s in spec.items()}
        dispatch = jax.jit(
            steps.make_dispatch(steps.make_train_step(workload), c.run.scan_unroll),
            donate_argnums=0).lower(state, stacked).compile()
        selfplay = jax.jit(workload.selfplay).lower(_variables(state), state.rng).compile()
        evaluator = workload.make_evaluator(_variables(state))
        evaluator.compile()
    window = Window(c.data.window_generations, run.path / REPLAY_DIR,
                    spare=c.run.checkpoint_keep - 1)
    manager = checkpoint.manager(run.path, keep=c.run.checkpoint_keep)
    generation = 0
    if resumed:
        state, progress, generation = _restore(manager, state, window)
    else:
        progress = attempt.new_progress()
    init_s = attempt.start_run(progress, state, int(state.step))
    say(f"[{workload.name}/{c.config_name}] init: done in {init_s:.1f} s"
        + (f" (resumed after generation {generation}; the clock kept running)" if resumed
           else "; the clock starts (run_start)"))
    clock = Clock(progress.run_start_unix)
    status, quality = "aborted", (progress.history[-1]["quality"] if resumed else float("nan"))
    with preemption.Flag(jax.process_count()) as preempt:
        while generation < int(c.run.max_generations):
            generation += 1
            with heartbeat(f"{name} generation {generation} (self-play, train, "
                           "evaluation)", every, enabled=lead):
                log.start(constants.BLOCK_START,
                          metadata={"first_epoch_num": generation, "epoch_count": 1})
                watch = Stopwatch()
                examples = jax.device_get(selfplay(_variables(state), _key(state, 0, generation)))
                positions = window.add(examples)
                log.event(ACTUAL_GAMES_KEY, workload.games_per_generation,
                          metadata={"epoch_num": generation})
                sampler = np.random.default_rng([int(c.run.seed), generation])  # resumable
                state, train_metrics = dispatch(state, jax.device_put(window.sample(sampler, k, b)))
                train_metrics = jax.device_get(train_metrics)
                block_s = watch.stop(state)
                progress.train_s += block_s
                log.end(constants.BLOCK_STOP, metadata={"first_epoch_num": generation})
                log.start(constants.EVAL_START, metadata={"epoch_num": generation})
                watch = Stopwatch()
                quality = evaluator.win_rate(_variables(state), _key(state, 1, generation))
                eval_s = watch.stop()
                progress.eval_s += eval_s
                log.end(constants.EVAL_STOP, metadata={"epoch_num": generation})
                log.event(constants.EVAL_ACCURACY, quality, metadata={"epoch_num": generation})
            elapsed = clock.read(state)
            progress.history.append({"elapsed_s": elapsed, "samples": generation * k * b,
                                     "quality": quality, "generation": generation})
            metrics.write_scalars(generation * k, {
                "win_rate": quality, "positions": positions, "window": len(window),
                "selfplay_black_wins": float(examples["black_wins"]),
                "selfplay_moves": float(examples["moves"]), "eval_s": eval_s,
                **{n: float(np.asarray(v)) for n, v in train_metrics.items()}})
            metrics.flush()
            say(f"[{workload.name}/{c.config_name}] generation {generation}: win rate "
                f"{quality:.3f} (target {workload.target.value}), loss "
                f"{float(train_metrics['loss']):.3f}, {positions} positions, at {elapsed:.1f} s; "
                + _figures(c, generation, k * b / block_s, progress, elapsed))
            if workload.target.reached(quality):
                status = "success"
                break
            if ((c.run.max_time_s and elapsed > c.run.max_time_s)
                    or generation == int(c.run.max_generations)):
                break
            # A generation boundary that does not end the run: resumable from here (on the
            # clock, as the supervised loop's checkpoints on its eval cadence).
            if jax.process_index() == 0:
                window.save(generation)
            checkpoint.save(manager, int(state.step), state, progress)
            if preempt.reached(generation):
                preemption.set_phase(preemption.FINISH)
                manager.close()
                result = attempt.preempted(progress, int(state.step), clock.read(state),
                                           generation=generation)
                say(f"Preempted after generation {generation}: checkpoint saved. Rerun the same "
                    "command to resume; the clock keeps running meanwhile.")
                return result
    run_s = attempt.stop_run(status, clock, state, progress)
    # ---- untimed from here -------------------------------------------------------------------
    with manager:
        if manager.latest_step() != int(state.step):  # a resume that had nothing left to play
            checkpoint.save(manager, int(state.step), state, progress)
    return attempt.summarize(progress, Outcome(status, quality, int(state.step), run_s), {
        "generations": generation,
        "games": generation * workload.games_per_generation,
        "opponent": c.eval.opponent,
    })


def _figures(c, generation: int, examples_per_s: float, progress: Progress,
             elapsed: float) -> str:
    """What a generation's line adds: examples trained per second of the generation's block
    (self-play and training) and the time to the budget (the generations left at the mean
    generation so far, no later than run.max_time_s on the clock)."""
    left = (int(c.run.max_generations) - generation) * (
        (progress.train_s + progress.eval_s) / max(1, generation))
    if c.run.max_time_s:
        left = max(0.0, min(left, float(c.run.max_time_s) - elapsed))
    return f"{examples_per_s:,.0f} examples/s; budget in ~{duration(left)}"


__all__ = ["GenerationWorkload", "Window", "train_and_evaluate"]
