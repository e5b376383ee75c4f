"""Orbax checkpoints of a run: the train state plus the run's progress (step = data position,
the accumulated clock, the eval history), restorable onto any mesh, and SIGTERM handling.

Layout: `<workdir>/checkpoints/<step>/{state,progress}`. Restoring takes the target shardings
from the abstract state, so a checkpoint saved data-parallel on 8 devices restores FSDP on 4.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import jax
import orbax.checkpoint as ocp

from tpubench import mesh as mesh_lib

CHECKPOINT_DIR = "checkpoints"


def manager(workdir: str | os.PathLike, keep: int = 2) -> ocp.CheckpointManager:
    """The run's CheckpointManager (items "state" and "progress")."""
    path = os.path.abspath(os.path.join(os.fspath(workdir), CHECKPOINT_DIR))
    options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True)
    return ocp.CheckpointManager(path, options=options, item_names=("state", "progress"))


def has_checkpoint(workdir: str | os.PathLike) -> bool:
    """True when `workdir` holds at least one finished checkpoint."""
    path = os.path.join(os.fspath(workdir), CHECKPOINT_DIR)
    if not os.path.isdir(path):
        return False
    return any(name.isdigit() for name in os.listdir(path))


def save(mgr: ocp.CheckpointManager, step: int, state: Any, progress: dict[str, Any]) -> None:
    """Save and wait until it is on disk (we only save at preemption, evals and the end)."""
    mgr.save(
        step,
        args=ocp.args.Composite(
            state=ocp.args.StandardSave(state), progress=ocp.args.JsonSave(progress)
        ),
        force=True,
    )
    mgr.wait_until_finished()


def restore(
    mgr: ocp.CheckpointManager, abstract_state: Any, shardings: Any, step: int | None = None
) -> tuple[Any, dict[str, Any]]:
    """(state, progress) of the latest (or given) step, placed with `shardings`."""
    step = mgr.latest_step() if step is None else step
    target = mesh_lib.with_shardings(abstract_state, shardings)
    restored = mgr.restore(
        step,
        args=ocp.args.Composite(
            state=ocp.args.StandardRestore(target), progress=ocp.args.JsonRestore()
        ),
    )
    return restored["state"], dict(restored["progress"])


def restore_variables(workdir: str | os.PathLike, workload: Any) -> tuple[Any, Any]:
    """(params, model_state) of a run's latest checkpoint, on the default device, for inference.

    Rebuilds the abstract train state from `workload` so the tree structure matches exactly.
    """
    from tpubench import steps  # local import: steps imports optax/flax models

    if not has_checkpoint(workdir):
        raise FileNotFoundError(
            f"No checkpoint under {os.path.join(os.fspath(workdir), CHECKPOINT_DIR)}: pass the "
            "--workdir of a finished training run."
        )
    abstract = steps.abstract_state(workload)
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    shardings = jax.tree.map(lambda _: device, abstract)
    with manager(workdir) as mgr:
        state, _ = restore(mgr, abstract, shardings)
    return state.params, state.model_state


class PreemptionFlag:
    """Set by SIGTERM (preemptible TPU VMs get one before shutdown); the loop polls it between
    dispatches, then saves and exits cleanly. Restores the previous handler on exit.

    Single-process only: with several processes JAX's own preemption service owns SIGTERM and
    agrees on a common step (`reached`), and a Python handler here would hide the signal from it.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._previous: Any = None

    def __enter__(self) -> PreemptionFlag:
        single = jax.process_count() == 1
        if single and threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self._event.set()

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)

    def reached(self, dispatch: int) -> bool:
        """Whether to save and stop after dispatch number `dispatch` (counts up by one, from the
        same value on every process). Multi-process: JAX's preemption sync point, a local check
        (no collective in the train loop) that turns true on the same dispatch everywhere."""
        if jax.process_count() == 1:
            return self._event.is_set()
        from jax.experimental import multihost_utils

        return multihost_utils.reached_preemption_sync_point(dispatch)
