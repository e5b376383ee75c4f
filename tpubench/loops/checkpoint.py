"""Orbax checkpoints of a run: the train state plus the run's progress (step = data position,
the run's clock anchor and accumulated times, the eval history), restorable onto any mesh.
SIGTERM handling lives in `tpubench.loops.preemption`.

Layout: `<workdir>/checkpoints/<step>/{state,progress}`. Restoring takes the target shardings
from the abstract state, so a checkpoint saved data-parallel on 8 devices restores FSDP on 4.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import orbax.checkpoint as ocp

from tpubench import mesh as mesh_lib
from tpubench.loops.progress import Progress

CHECKPOINT_DIR = "checkpoints"


def manager(workdir: str | os.PathLike, keep: int = 2) -> ocp.CheckpointManager:
    """The run's CheckpointManager (items "state" and "progress")."""
    path = os.path.abspath(os.path.join(os.fspath(workdir), CHECKPOINT_DIR))
    options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True)
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
