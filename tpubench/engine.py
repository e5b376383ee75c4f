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
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from tpubench import mesh as mesh_lib
from tpubench import perf, steps
from tpubench.workload import Batch, Workload


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
        self.logical_specs = nn.get_partition_spec(boxed)  # for tpubench.sharding_report
        self.state_shardings = mesh_lib.state_shardings(
            boxed, mesh, self.rules, self.config.fsdp_min_size
        )
        self.batch_sharding = mesh_lib.batch_sharding(mesh)
        self.block_sharding = mesh_lib.batch_sharding(mesh, leading_dims=1)
        self.replicated = NamedSharding(mesh, P())
        self._gather = None

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

    def compile(
        self, steps_per_dispatch: int, synthetic: bool, other_sizes: tuple[int, ...] = ()
    ) -> dict[str, Any]:
        """AOT-compile the K-step train block, a block of each of `other_sizes` steps (the
        remainders of eval intervals), and the eval step; returns executables and FLOPs/step."""
        gbs, ebs = self.config.global_batch_size, self.config.eval_batch_size
        state_in = mesh_lib.with_shardings(self.abstract_state, self.state_shardings)
        train_step = steps.make_train_step(self.workload)
        batch_in = self._abstract_batch(gbs, True, self.batch_sharding)
        with self.context():
            flops = perf.flops_of(jax.jit(train_step).lower(state_in, batch_in))
            train = self._compile_block(train_step, steps_per_dispatch, synthetic, state_in)
            by_size = {k: self._compile_block(train_step, k, synthetic, state_in)
                       for k in other_sizes if k != steps_per_dispatch}
            eval_in = self._abstract_batch(ebs, False, self.batch_sharding)
            evaluate = jax.jit(steps.make_eval_step(self.workload)).lower(
                state_in, eval_in).compile()
            self._gather = self._compile_gather(evaluate)
        return {"train": train, "train_by_size": by_size, "eval": evaluate,
                "flops_per_step": flops}

    def _compile_block(self, train_step, k: int, synthetic: bool, state_in):
        gbs = self.config.global_batch_size
        if synthetic:
            constrain = lambda b: jax.lax.with_sharding_constraint(b, self.batch_sharding)
            block = steps.make_synthetic_block(
                train_step, self.workload, k, gbs, constrain, self.config.scan_unroll)
            args = (state_in,)
        else:
            block = steps.make_block(train_step, self.config.scan_unroll)
            args = (state_in, self._abstract_batch(gbs, True, self.block_sharding, (k,)))
        return jax.jit(
            block, out_shardings=(self.state_shardings, self.replicated), donate_argnums=0,
        ).lower(*args).compile()

    def _compile_gather(self, evaluate):
        """Multi-process: a compiled all-gather of the per-example eval outputs, so that reading
        them on the clock compiles nothing. None when every output is addressable here."""
        if jax.process_count() == 1:
            return None
        shapes, shardings = evaluate.out_info, evaluate.output_shardings
        per_example = {k: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=shardings[k])
                       for k, s in shapes.items() if len(s.shape) > 0}
        if not per_example:
            return None
        return jax.jit(lambda t: t, out_shardings=self.replicated).lower(per_example).compile()

    def eval_to_host(self, outputs: list[dict[str, jax.Array]]) -> dict[str, np.ndarray]:
        """The eval outputs of every batch, on the host: scalar sums added (float64), per-example
        arrays concatenated over batches and processes. Compiles nothing (the multi-process
        all-gather is compiled with the eval step)."""
        if self._gather is not None:
            outputs = [dict(o, **self._gather({k: v for k, v in o.items() if v.ndim}))
                       for o in outputs]
        return merge_eval_outputs(jax.device_get(outputs))

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
    logical_specs = None  # no logical axes: every leaf is replicated per device

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

    def compile(
        self, steps_per_dispatch: int, synthetic: bool, other_sizes: tuple[int, ...] = ()
    ) -> dict[str, Any]:
        """pmap-compile the block(s) and eval step (by lowering on abstract per-device shapes)."""
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
        by_size = {}
        for k in other_sizes:
            if k == steps_per_dispatch:
                continue
            block_k = steps.make_synthetic_block(
                train_step, self.workload, k, gbs // self.n, unroll=self.config.scan_unroll,
            ) if synthetic else block
            args_k = (state_in,) if synthetic else (
                state_in, self._spec(gbs // self.n, True, (self.n, k)))
            by_size[k] = jax.pmap(block_k, axis_name=self.axis, donate_argnums=0,
                                  devices=self.devices).lower(*args_k).compile()
        # Metrics come back per device ([devices]-shaped, equal after pmean): the loop reads
        # them on the host, so no eager indexing (a compile) happens on the clock.
        return {"train": train, "train_by_size": by_size, "eval": evaluate,
                "flops_per_step": flops}

    def eval_to_host(self, outputs: list[dict[str, jax.Array]]) -> dict[str, np.ndarray]:
        """psum'd scalars come back as [devices] (take one), per-example outputs as
        [devices, b, ...] (merged into [B, ...]), on the host: no compile on the clock."""
        host = [{k: v[0] if v.ndim == 1 else v.reshape((-1,) + v.shape[2:])
                 for k, v in o.items()} for o in jax.device_get(outputs)]
        return merge_eval_outputs(host)

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
        """One replica, as host arrays (restorable by either engine). Copied, not indexed on
        device: an eager index would compile on the clock."""
        return jax.tree.map(lambda x: np.asarray(jax.device_get(x.addressable_data(0)))[0], state)

    def from_checkpoint(self, state: steps.TrainState) -> steps.TrainState:
        """Replicate a restored single-device state."""
        return jax_utils.replicate(state, self.devices)


def merge_eval_outputs(host: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Per-batch eval outputs -> scalar sums (float64) and concatenated per-example arrays."""
    merged: dict[str, np.ndarray] = {}
    for key in host[0] if host else ():
        values = [np.asarray(o[key]) for o in host]
        if values[0].ndim == 0:
            merged[key] = np.sum(np.asarray(values, np.float64))
        else:
            merged[key] = np.concatenate(values)
    return merged


def create(workload: Workload, mesh: jax.sharding.Mesh) -> JitEngine | PmapEngine:
    """The engine `config.parallelism` names."""
    if workload.config.parallelism == "pmap":
        return PmapEngine(workload, mesh)
    return JitEngine(workload, mesh)
