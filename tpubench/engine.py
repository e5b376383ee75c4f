"""Engines turn the pure steps into compiled executables placed on devices.

`JitEngine` (the default): `jax.jit` with NamedShardings over the mesh, ahead-of-time compiled
(`.lower(...).compile()`), so no compile can happen after `run_start`. `PmapEngine`: the classic
`pmap` data-parallel path, kept for comparison (`config.parallelism="pmap"`). Both expose the same
methods, so the training loop does not know which one it drives.
"""

from __future__ import annotations

import contextlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import jax_utils
from flax import linen as nn
from jax import lax
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from tpubench import mesh as mesh_lib
from tpubench import perf, steps
from tpubench.workload import Batch, Workload


def gather_to_host(x: jax.Array) -> np.ndarray:
    """A global array's full value on every host (per-example eval outputs)."""
    if jax.process_count() > 1 and not x.is_fully_addressable:
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(jax.device_get(x))


class JitEngine:
    """jit + NamedSharding over a mesh (data / fsdp / tensor)."""

    def __init__(self, workload: Workload, mesh: jax.sharding.Mesh):
        self.workload = workload
        self.mesh = mesh
        self.config = workload.config
        self.rules = mesh_lib.rules(workload.logical_axis_rules())
        self._init = steps.boxed_init_fn(workload)
        boxed = jax.eval_shape(self._init, jax.random.PRNGKey(0))
        self.abstract_state = nn.meta.unbox(boxed)
        self.state_shardings = mesh_lib.state_shardings(
            boxed, mesh, self.rules, self.config.fsdp_min_size
        )
        self.batch_sharding = mesh_lib.batch_sharding(mesh)
        self.block_sharding = mesh_lib.batch_sharding(mesh, leading_dims=1)
        self.replicated = NamedSharding(mesh, P())

    @contextlib.contextmanager
    def context(self):
        """Mesh + logical-axis rules for tracing (models may call nn.with_logical_constraint)."""
        with jax.set_mesh(self.mesh), nn.logical_axis_rules(self.rules):
            yield

    def init_state(self, seed: int) -> steps.TrainState:
        """Initialise the state directly into its shardings (never materialised whole)."""
        fn = jax.jit(lambda r: nn.meta.unbox(self._init(r)), out_shardings=self.state_shardings)
        with self.context():
            return fn(jax.random.PRNGKey(seed))

    def _abstract_batch(self, batch_size: int, train: bool, sharding, lead=()) -> Batch:
        spec = self.workload.batch_spec(batch_size, train=train)
        return {
            k: jax.ShapeDtypeStruct(lead + tuple(s.shape), s.dtype, sharding=sharding)
            for k, s in spec.items()
        }

    def compile(self, steps_per_dispatch: int, synthetic: bool) -> dict[str, Any]:
        """AOT-compile the train block and eval step; returns executables and FLOPs per step."""
        gbs, ebs = self.config.global_batch_size, self.config.eval_batch_size
        state_in = mesh_lib.with_shardings(self.abstract_state, self.state_shardings)
        train_step = steps.make_train_step(self.workload)
        batch_in = self._abstract_batch(gbs, True, self.batch_sharding)
        with self.context():
            flops = perf.flops_of(jax.jit(train_step).lower(state_in, batch_in))
            if synthetic:
                constrain = lambda b: jax.lax.with_sharding_constraint(b, self.batch_sharding)
                block = steps.make_synthetic_block(
                    train_step, self.workload, steps_per_dispatch, gbs, constrain,
                    self.config.scan_unroll,
                )
                args = (state_in,)
            else:
                block = steps.make_block(train_step, self.config.scan_unroll)
                args = (state_in, self._abstract_batch(
                    gbs, True, self.block_sharding, (steps_per_dispatch,)))
            train = jax.jit(
                block,
                out_shardings=(self.state_shardings, self.replicated),
                donate_argnums=0,
            ).lower(*args).compile()
            eval_in = self._abstract_batch(ebs, False, self.batch_sharding)
            evaluate = jax.jit(steps.make_eval_step(self.workload)).lower(
                state_in, eval_in).compile()
        return {"train": train, "eval": evaluate, "flops_per_step": flops}

    def put(self, host_batch: Batch, block: bool) -> Batch:
        """This process's numpy slice(s) -> global sharded arrays. `block`: [K, B_local, ...]."""
        sharding = self.block_sharding if block else self.batch_sharding
        return {
            k: jax.make_array_from_process_local_data(sharding, np.asarray(v))
            for k, v in host_batch.items()
        }

    def for_checkpoint(self, state: steps.TrainState) -> steps.TrainState:
        """The state as orbax should save it (already global arrays)."""
        return state

    def from_checkpoint(self, state: steps.TrainState) -> steps.TrainState:
        """Inverse of `for_checkpoint`."""
        return state


class PmapEngine:
    """Data parallel over local devices with `jax.pmap` (the pre-jit way, for comparison).

    Gradients, metrics and batch-norm statistics are averaged with `lax.pmean`; batch norm sees
    per-device statistics (model_bn_span = per-device batch), as in the original MLPerf code.
    """

    axis = "batch"

    def __init__(self, workload: Workload, mesh: jax.sharding.Mesh | None = None):
        self.workload = workload
        self.config = workload.config
        self.devices = jax.local_devices()
        self.n = len(self.devices)
        self._init = steps.boxed_init_fn(workload)
        self.abstract_state = nn.meta.unbox(jax.eval_shape(self._init, jax.random.PRNGKey(0)))
        single = jax.sharding.SingleDeviceSharding(self.devices[0])
        self.state_shardings = jax.tree.map(lambda _: single, self.abstract_state)
        # Leading axis over the local devices, in pmap's order (what device_put_sharded did
        # before JAX removed it; flax's `replicate` places the state the same way).
        stacked_mesh = jax.sharding.Mesh(np.array(self.devices), ("devices",))
        self._stacked = NamedSharding(stacked_mesh, P("devices"))

    @contextlib.contextmanager
    def context(self):
        """Nothing to enter: pmap places by the leading device axis."""
        yield

    def init_state(self, seed: int) -> steps.TrainState:
        """Initialise once, replicate to every local device."""
        state = jax.jit(lambda r: nn.meta.unbox(self._init(r)))(jax.random.PRNGKey(seed))
        return jax_utils.replicate(state, self.devices)

    def compile(self, steps_per_dispatch: int, synthetic: bool) -> dict[str, Any]:
        """pmap-compile the block and eval step (by lowering on abstract per-device shapes)."""
        gbs, ebs = self.config.global_batch_size, self.config.eval_batch_size
        if gbs % self.n or ebs % self.n:
            from tpubench.errors import UsageError

            raise UsageError(
                f"pmap: global_batch_size={gbs} and eval_batch_size={ebs} must be multiples of "
                f"the {self.n} local devices."
            )
        reduce = lambda tree: lax.pmean(tree, self.axis)
        train_step = steps.make_train_step(self.workload, grad_reduce=reduce)
        flops = perf.flops_of(
            jax.jit(steps.make_train_step(self.workload)).lower(
                self.abstract_state, self._spec(gbs, True, ())
            )
        )
        if synthetic:
            block = steps.make_synthetic_block(
                train_step, self.workload, steps_per_dispatch, gbs // self.n,
                unroll=self.config.scan_unroll,
            )
        else:
            block = steps.make_block(train_step, self.config.scan_unroll)
        eval_step = steps.make_eval_step(self.workload)

        def eval_fn(state, batch):
            out = eval_step(state, batch)
            return {k: lax.psum(v, self.axis) if jnp.ndim(v) == 0 else v for k, v in out.items()}

        state_in = jax.tree.map(
            lambda a: jax.ShapeDtypeStruct((self.n,) + a.shape, a.dtype), self.abstract_state
        )
        pmapped = jax.pmap(block, axis_name=self.axis, donate_argnums=0, devices=self.devices)
        args = (state_in,) if synthetic else (
            state_in, self._spec(gbs // self.n, True, (self.n, steps_per_dispatch)))
        train = pmapped.lower(*args).compile()
        evaluate = jax.pmap(eval_fn, axis_name=self.axis, devices=self.devices).lower(
            state_in, self._spec(ebs // self.n, False, (self.n,))).compile()
        return {
            "train": _first_replica_metrics(train),
            "eval": _unshard_outputs(evaluate),
            "flops_per_step": flops,
        }

    def _spec(self, batch_size: int, train: bool, lead: tuple) -> Batch:
        spec = self.workload.batch_spec(batch_size, train=train)
        return {k: jax.ShapeDtypeStruct(lead + tuple(s.shape), s.dtype) for k, s in spec.items()}

    def put(self, host_batch: Batch, block: bool) -> Batch:
        """[K, B, ...] or [B, ...] -> [devices, K, B/devices, ...] / [devices, B/devices, ...]."""

        def split(x):
            x = np.asarray(x)
            if block:
                k, b = x.shape[:2]
                x = x.reshape((k, self.n, b // self.n) + x.shape[2:]).swapaxes(0, 1)
            else:
                x = x.reshape((self.n, x.shape[0] // self.n) + x.shape[1:])
            return jax.device_put(x, self._stacked)

        return {k: split(v) for k, v in host_batch.items()}

    def for_checkpoint(self, state: steps.TrainState) -> steps.TrainState:
        """One replica, as a plain single-device state (restorable by either engine)."""
        return jax_utils.unreplicate(state)

    def from_checkpoint(self, state: steps.TrainState) -> steps.TrainState:
        """Replicate a restored single-device state."""
        return jax_utils.replicate(state, self.devices)


def _first_replica_metrics(compiled_train):
    """pmapped block -> (per-device state, metrics of replica 0). The metrics are pmean'd, so
    every replica holds the same values, and the loop reads them as scalars, as under jit."""

    def run(*args):
        state, metrics = compiled_train(*args)
        return state, {k: v[0] for k, v in metrics.items()}

    return run


def _unshard_outputs(compiled_eval):
    """pmapped eval -> the jit engine's shapes: psum'd scalars come back as [devices] (take one),
    per-example outputs as [devices, b, ...] (merge into [B, ...])."""

    def run(state, batch):
        out = compiled_eval(state, batch)
        return {k: v[0] if v.ndim == 1 else v.reshape((-1,) + v.shape[2:]) for k, v in out.items()}

    return run


def create(workload: Workload, mesh: jax.sharding.Mesh) -> JitEngine | PmapEngine:
    """The engine `config.parallelism` names."""
    if workload.config.parallelism == "pmap":
        return PmapEngine(workload, mesh)
    return JitEngine(workload, mesh)
