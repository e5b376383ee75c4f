"""Orbax checkpoints of a run: the train state plus the run's progress (step = data position,
the run's clock anchor and accumulated times, the eval history), restorable onto any mesh.
SIGTERM handling lives in `tpubench.loops.preemption`.

Layout: `<workdir>/checkpoints/<step>/{state,progress}`. Restoring takes the target shardings
from the abstract state, so a checkpoint saved data-parallel on 8 devices restores FSDP on 4.

A run keeps at least two checkpoints (`run.checkpoint_keep` >= 2, else a `UsageError` before
any compute): when the newest cannot be restored (a data file truncated or deleted, `_METADATA`
missing: orbax or TensorStore raise), `restore_usable` sets it aside, kept and never deleted, as
`<workdir>/checkpoints_damaged/<step>` (outside orbax's directory, so orbax neither lists nor
deletes it), says so in one line on stderr and restores the previous one. With none left the
loop starts a new attempt in the same workdir (`NoUsableCheckpoint`; the log so far is set aside
as `mlperf_log.failed_attempt<N>.txt` by `RunDir.prepare`). A save cut short (even by SIGKILL)
leaves only orbax's temporary directory, `<step>.orbax-checkpoint-tmp-<n>`, which is never
listed as a checkpoint: the rerun resumes from the previous one.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import jax
import orbax.checkpoint as ocp

from tpubench import mesh as mesh_lib
from tpubench.errors import UsageError
from tpubench.loops.progress import Progress

CHECKPOINT_DIR = "checkpoints"
DAMAGED_DIR = "checkpoints_damaged"
MIN_KEEP = 2  # the newest and the one to fall back to when the newest is damaged


class NoUsableCheckpoint(Exception):
    """Every checkpoint of the workdir failed to restore and was set aside: start over."""


def check_keep(config: Any) -> None:
    """`UsageError` unless `run.checkpoint_keep` >= 2 (before any compute)."""
    keep = config.run.checkpoint_keep
    if not isinstance(keep, int) or keep < MIN_KEEP:
        raise UsageError(
            f"--config.run.checkpoint_keep={keep!r}: a run keeps at least {MIN_KEEP} checkpoints, "
            "so that a damaged newest checkpoint falls back to the previous one. Pass "
            f"--config.run.checkpoint_keep={MIN_KEEP} (the default) or more.")


def manager(workdir: str | os.PathLike, keep: int = 2) -> ocp.CheckpointManager:
    """The run's CheckpointManager (items "state" and "progress")."""
    path = os.path.abspath(os.path.join(os.fspath(workdir), CHECKPOINT_DIR))
    # cleanup_tmp_directories: a save cut short (SIGKILL) left `<step>.orbax-checkpoint-tmp`,
    # never a checkpoint; removed here rather than with a warning at the next save of `step`.
    options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                           cleanup_tmp_directories=True)
    return ocp.CheckpointManager(path, options=options, item_names=("state", "progress"))


def latest_step(workdir: str | os.PathLike) -> int | None:
    """The step of the newest finished checkpoint under `workdir`, or None. Orbax writes into a
    temporary directory and renames it to the step number when complete, so an interrupted save
    is never listed."""
    path = os.path.join(os.fspath(workdir), CHECKPOINT_DIR)
    if not os.path.isdir(path):
        return None
    steps = [int(name) for name in os.listdir(path) if name.isdigit()]
    return max(steps) if steps else None


def has_checkpoint(workdir: str | os.PathLike) -> bool:
    """True when `workdir` holds at least one finished checkpoint."""
    return latest_step(workdir) is not None


def save(mgr: ocp.CheckpointManager, step: int, state: Any, progress: Progress) -> None:
    """Save and wait until it is on disk (we only save at preemption, evals and the end)."""
    mgr.save(
        step,
        args=ocp.args.Composite(
            state=ocp.args.StandardSave(state),
            progress=ocp.args.JsonSave(progress.to_json(step)),
        ),
        force=True,
    )
    mgr.wait_until_finished()


def restore(
    mgr: ocp.CheckpointManager, abstract_state: Any, shardings: Any, step: int | None = None
) -> tuple[Any, Progress]:
    """(state, progress) of the latest (or given) step, placed with `shardings`. Progress saved
    by earlier versions as a plain dict with the same keys restores too."""
    step = mgr.latest_step() if step is None else step
    target = mesh_lib.with_shardings(abstract_state, shardings)
    restored = mgr.restore(
        step,
        args=ocp.args.Composite(
            state=ocp.args.StandardRestore(target), progress=ocp.args.JsonRestore()
        ),
    )
    return restored["state"], Progress.from_json(dict(restored["progress"]))


def restore_usable(mgr: ocp.CheckpointManager, abstract_state: Any, shardings: Any
                   ) -> tuple[Any, Progress, int]:
    """(state, progress, step) of the newest checkpoint that restores. Each newer one that
    fails (orbax or TensorStore raise: a truncated or missing file) is set aside
    (`set_aside`) with one line on stderr. `NoUsableCheckpoint` when none is left."""
    _quiet_closed_loop()  # before: the reports start while the failing restore unwinds
    for step in sorted(mgr.all_steps(), reverse=True):
        try:
            state, progress = restore(mgr, abstract_state, shardings, step)
            return state, progress, step
        except Exception as e:  # what a damaged file raises varies (ValueError, TensorStore's)
            # The first sentence: TensorStore appends a page of its spec after "See full".
            reason = (str(e).strip().splitlines() or [""])[0].split(" See full")[0][:300]
            _quiet_orphaned_reads(os.path.join(os.fspath(mgr.directory), str(step)))
            where = set_aside(mgr.directory, step)
            print(f"tpubench: checkpoint {step} cannot be restored ({type(e).__name__}: "
                  f"{reason}); set aside, kept, as {where}; trying the previous one.",
                  file=sys.stderr, flush=True)
            mgr.reload()
    print("tpubench: no usable checkpoint is left: the run starts over in the same workdir "
          "(the log so far is kept as mlperf_log.failed_attempt<N>.txt).", file=sys.stderr,
          flush=True)
    raise NoUsableCheckpoint()


def _closed_loop(unraisable: Any) -> bool:
    """Whether `unraisable` is asyncio's "Event loop is closed" from `call_soon_threadsafe`:
    a failed restore ends orbax's event loop while TensorStore still completes the reads in
    flight, and each completion reports this (a traceback apiece on stderr, nothing wrong)."""
    tb = unraisable.exc_traceback
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return (isinstance(unraisable.exc_value, RuntimeError)
            and str(unraisable.exc_value) == "Event loop is closed"
            and tb is not None and tb.tb_frame.f_code.co_name == "_check_closed")


def _quiet_closed_loop() -> None:
    """Drop `_closed_loop` reports from now on (idempotent); report everything else."""
    previous = sys.unraisablehook
    if getattr(previous, "_tpubench_closed_loop", False):
        return

    def hook(unraisable: Any) -> None:
        if not _closed_loop(unraisable):
            previous(unraisable)

    hook._tpubench_closed_loop = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


class _OrphanedReads(logging.Filter):
    """Drops asyncio's "Task exception was never retrieved" for the reads of a checkpoint that
    was set aside: one failing read ends the restore, and each sibling read of the same damaged
    files fails later, unawaited, and reports a page-long traceback when collected."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Task exception was never retrieved"):
            return True
        text = str(record.msg) + (str(record.exc_info[1]) if record.exc_info else "")
        return not any(path in text for path in self.paths)


_ORPHANED = _OrphanedReads()


def _quiet_orphaned_reads(step_dir: str) -> None:
    """From now on, drop the orphaned-read reports that name `step_dir` (see `_OrphanedReads`)."""
    _ORPHANED.paths.add(step_dir.rstrip(os.sep) + os.sep)
    logger = logging.getLogger("asyncio")
    if _ORPHANED not in logger.filters:
        logger.addFilter(_ORPHANED)


def set_aside(checkpoints: str | os.PathLike, step: int) -> str:
    """Move `checkpoints/<step>` to `../checkpoints_damaged/<step>` (`<step>.<n>` when taken);
    the new path. Process 0 moves it; every process waits for that."""
    checkpoints = os.fspath(checkpoints)
    damaged = os.path.join(os.path.dirname(checkpoints.rstrip(os.sep)), DAMAGED_DIR)
    target, n = os.path.join(damaged, str(step)), 0
    while os.path.exists(target):
        n += 1
        target = os.path.join(damaged, f"{step}.{n}")
    if jax.process_index() == 0:
        os.makedirs(damaged, exist_ok=True)
        os.rename(os.path.join(checkpoints, str(step)), target)
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(f"tpubench checkpoint {step} set aside")
    return target


def restore_variables(workdir: str | os.PathLike, workload: Any) -> tuple[Any, Any]:
    """(params, model_state) of a run's latest checkpoint, on the default device, for inference.

    Rebuilds the abstract train state from `workload` so the tree structure matches exactly,
    but for top-level model-state entries the checkpoint holds and `workload` does not (a
    distillation run's frozen teacher, `workloads/bert/distill.py`, served without it): those
    are read and dropped.
    """
    from tpubench.loops import steps  # local import: steps imports optax/flax models

    if not has_checkpoint(workdir):
        raise FileNotFoundError(
            f"No checkpoint under {os.path.join(os.fspath(workdir), CHECKPOINT_DIR)}: pass the "
            "--workdir of a finished training run."
        )
    abstract = steps.abstract_state(workload)
    extra = _extra_model_state(workdir, abstract.model_state)
    if extra:
        abstract = abstract.replace(model_state={**abstract.model_state, **extra})
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    shardings = jax.tree.map(lambda _: device, abstract)
    with manager(workdir) as mgr:
        state, _ = restore(mgr, abstract, shardings)
    model_state = state.model_state
    if extra:
        model_state = {k: v for k, v in model_state.items() if k not in extra}
    return state.params, model_state


def metadata_tree(state_dir: str | os.PathLike) -> Any:
    """The saved train state's tree of array metadata (shapes, dtypes) in `state_dir` (a
    checkpoint step's `state` item), read without loading any array."""
    meta = ocp.StandardCheckpointer().metadata(os.fspath(state_dir))
    tree = getattr(meta, "item_metadata", meta)
    return getattr(tree, "tree", tree)


def _extra_model_state(workdir: str | os.PathLike, model_state: Any) -> dict[str, Any]:
    """Abstract values (from the metadata) of the latest checkpoint's top-level model-state
    entries that `model_state` (a dict) lacks."""
    if not isinstance(model_state, dict):
        return {}
    path = os.path.join(os.path.abspath(os.fspath(workdir)), CHECKPOINT_DIR,
                        str(latest_step(workdir)), "state")
    tree = metadata_tree(path)
    saved = tree.get("model_state") if hasattr(tree, "get") else None
    if not isinstance(saved, dict):
        return {}
    return {k: jax.tree.map(lambda m: jax.ShapeDtypeStruct(tuple(m.shape), m.dtype), v)
            for k, v in saved.items() if k not in model_state}
