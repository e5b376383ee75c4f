"""Engines turn the pure steps into compiled executables placed on devices.

`JitEngine` (the default): `jax.jit` with NamedShardings over the mesh, ahead-of-time compiled
(`.lower(...).compile()`), so no compile can happen after `run_start`. `PmapEngine`: the classic
`pmap` data-parallel path, kept for comparison (`config.run.parallelism="pmap"`). Both expose the
same
methods, so the training loop does not know which one it drives.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
from flax import jax_utils
from flax import linen as nn
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from tpubench import evaluation
from tpubench import mesh as mesh_lib
from tpubench.loops import steps
from tpubench.platform import perf
from tpubench.workload import Batch, Workload


@dataclasses.dataclass(frozen=True)
class Compiled:
    """What an engine compiles before the clock starts.

    `train` runs one dispatch of `steps_per_dispatch` (K) steps; `train_by_size` holds one
    executable per other dispatch size the run needs (the remainders of eval intervals);
    `eval` is the eval step; `flops_per_step` is one train step's FLOP count (for MFU)."""

    train: Any
    train_by_size: Mapping[int, Any]
    eval: Any
    flops_per_step: float
    steps_per_dispatch: int

    def dispatch(self, size: int) -> Any:
        """The executable for a dispatch of `size` steps (compiled before run_start)."""
        return self.train if size == self.steps_per_dispatch else self.train_by_size[size]


class JitEngine:
    """jit + NamedSharding over a mesh (data / fsdp / tensor)."""

    def __init__(self, workload: Workload, mesh: jax.sharding.Mesh):
        self.workload = workload
        self.mesh = mesh
        self.config = workload.config
        self.rules = mesh_lib.rules(workload.logical_axis_rules())
        self._init = jax.jit(steps.boxed_init_fn(workload))
        key = jax.eval_shape(lambda: jax.random.PRNGKey(0))  # abstract: no eager op
        with self.context():  # as in init_state: the mesh is part of JAX's trace-cache key
            boxed = self._init.trace(key).out_info
        self.abstract_state = nn.meta.unbox(boxed)
        self.logical_specs = nn.get_partition_spec(boxed)  # for tpubench.platform.sharding_report
        self.state_shardings = mesh_lib.state_shardings(
            boxed, mesh, self.rules, self.config.run.fsdp_min_size
        )
        self.batch_sharding = mesh_lib.batch_sharding(mesh)
        self.stacked_sharding = mesh_lib.batch_sharding(mesh, leading_dims=1)
        self.replicated = NamedSharding(mesh, P())
        self._gather = None

    @contextlib.contextmanager
    def context(self):
        """Mesh + logical-axis rules for tracing (models may call nn.with_logical_constraint)."""
        with jax.set_mesh(self.mesh), nn.logical_axis_rules(self.rules):
            yield

    def init_state(self, seed: int) -> steps.TrainState:
        """Initialise the state directly into its shardings (never materialised whole). Calls
        the jit that `__init__` traced for the abstract state, so the model's init is traced
        once per process."""
        fn = jax.jit(lambda r: nn.meta.unbox(self._init(r)), out_shardings=self.state_shardings)
        key = jax.random.PRNGKey(seed)  # made outside the mesh: no mesh sharding in its type
        with self.context():
            return fn(key)

    def _abstract_batch(self, batch_size: int, train: bool, sharding, lead=()) -> Batch:
        spec = self.workload.batch_spec(batch_size, train=train)
        return {
            k: jax.ShapeDtypeStruct(lead + tuple(s.shape), s.dtype, sharding=sharding)
            for k, s in spec.items()
        }

    def compile(
        self, steps_per_dispatch: int, synthetic: bool, other_sizes: tuple[int, ...] = ()
    ) -> Compiled:
        """AOT-compile the K-step train dispatch, a dispatch of each of `other_sizes` steps (the
        remainders of eval intervals), and the eval step."""
        gbs, ebs = self.config.data.global_batch_size, self.config.eval.batch_size
        state_in = mesh_lib.with_shardings(self.abstract_state, self.state_shardings)
        # One trace of the train step serves the FLOP count and every dispatch: the dispatches
        # call this jit inside their own, and JAX reuses its traced jaxpr (same input types)
        # instead of tracing the model again (issue 10.7: the second trace was ~1 s of a warm
        # init). XLA inlines the nested call, so the compiled dispatch computes the same.
        train_step = jax.jit(steps.make_train_step(self.workload))
        batch_in = self._abstract_batch(gbs, True, self.batch_sharding)
        with self.context():
            flops = perf.flops_of(train_step.trace(state_in, batch_in).lower())
            train = self._compile_dispatch(train_step, steps_per_dispatch, synthetic, state_in)
            by_size = {k: self._compile_dispatch(train_step, k, synthetic, state_in)
                       for k in other_sizes if k != steps_per_dispatch}
            eval_in = self._abstract_batch(ebs, False, self.batch_sharding)
            evaluate = jax.jit(steps.make_eval_step(self.workload)).lower(
                state_in, eval_in).compile()
            self._gather = self._compile_gather(evaluate)
        return Compiled(train, by_size, evaluate, flops, steps_per_dispatch)

    def _compile_dispatch(self, train_step, k: int, synthetic: bool, state_in):
        gbs = self.config.data.global_batch_size
        if synthetic:
            constrain = lambda b: jax.lax.with_sharding_constraint(b, self.batch_sharding)
            fn = steps.make_synthetic_dispatch(
                train_step, self.workload, k, gbs, constrain, self.config.run.scan_unroll)
            args = (state_in,)
        else:
            fn = steps.make_dispatch(train_step, self.config.run.scan_unroll)
            args = (state_in, self._abstract_batch(gbs, True, self.stacked_sharding, (k,)))
        return jax.jit(
            fn, out_shardings=(self.state_shardings, self.replicated), donate_argnums=0,
        ).lower(*args).compile()

    def _compile_gather(self, evaluate):
        """Multi-process: a compiled all-gather of the per-example eval outputs and their mask,
        so that reading them on the clock compiles nothing. None when every output is
        addressable here (one process) or there is none."""
        if jax.process_count() == 1:
            return None
        shapes, shardings = evaluate.out_info, evaluate.output_shardings
        if not shapes.per_example:
            return None
        rows = jax.tree.map(lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh),
                            (shapes.per_example, shapes.mask),
                            (shardings.per_example, shardings.mask))
        return jax.jit(lambda t: t, out_shardings=self.replicated).lower(rows).compile()

    def eval_to_host(self, outputs: list[evaluation.BatchEval]) -> list[evaluation.BatchEval]:
        """Every batch's masked eval outputs as numpy, per-example rows of every process
        included. Compiles nothing (the multi-process all-gather is compiled with the eval
        step)."""
        if self._gather is not None:
            gathered = [self._gather((o.per_example, o.mask)) for o in outputs]
            outputs = [o.replace(per_example=p, mask=m) for o, (p, m) in zip(
                outputs, gathered, strict=True)]
        return jax.device_get(outputs)

    def put(self, host_batch: Batch, stacked: bool) -> Batch:
        """This process's numpy slice(s) -> global sharded arrays. `stacked`: the batches of a
        K-step dispatch, [K, B_local, ...]; otherwise one batch, [B_local, ...]."""
        sharding = self.stacked_sharding if stacked else self.batch_sharding
        if jax.process_count() == 1:
            # What make_array_from_process_local_data does for one process, minus its checks,
            # in one batched call: 81 vs 136 us of host CPU per ResNet-mini batch (measured),
            # paid once per dispatch on the prefetch thread beside XLA's (issue 10.9).
            return jax.device_put({k: np.asarray(v) for k, v in host_batch.items()}, sharding)
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
    ) -> Compiled:
        """pmap-compile the train dispatch(es) and eval step (by lowering on abstract per-device
        shapes)."""
        gbs, ebs = self.config.data.global_batch_size, self.config.eval.batch_size
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
        eval_step = steps.make_eval_step(self.workload)

        def eval_fn(state, batch):
            out = eval_step(state, batch)  # only the masked sums are reduced over devices
            return out.replace(sums=lax.psum(out.sums, self.axis),
                               examples=lax.psum(out.examples, self.axis))

        state_in = jax.tree.map(
            lambda a: jax.ShapeDtypeStruct((self.n,) + a.shape, a.dtype), self.abstract_state
        )

        def compile_dispatch(k: int):
            if synthetic:
                fn = steps.make_synthetic_dispatch(
                    train_step, self.workload, k, gbs // self.n, unroll=self.config.run.scan_unroll)
                args = (state_in,)
            else:
                fn = steps.make_dispatch(train_step, self.config.run.scan_unroll)
                args = (state_in, self._spec(gbs // self.n, True, (self.n, k)))
            return jax.pmap(fn, axis_name=self.axis, donate_argnums=0,
                            devices=self.devices).lower(*args).compile()

        train = compile_dispatch(steps_per_dispatch)
        evaluate = jax.pmap(eval_fn, axis_name=self.axis, devices=self.devices).lower(
            state_in, self._spec(ebs // self.n, False, (self.n,))).compile()
        by_size = {k: compile_dispatch(k) for k in other_sizes if k != steps_per_dispatch}
        # Metrics come back per device ([devices]-shaped, equal after pmean): the loop reads
        # them on the host, so no eager indexing (a compile) happens on the clock.
        return Compiled(train, by_size, evaluate, flops, steps_per_dispatch)

    def eval_to_host(self, outputs: list[evaluation.BatchEval]) -> list[evaluation.BatchEval]:
        """Every batch's masked eval outputs as numpy: the psum'd sums come back as [devices]
        (equal; take one), per-example rows and mask as [devices, b, ...] (merged into
        [B, ...]), read on the host so that no compile happens on the clock."""
        merge = lambda v: v.reshape((-1,) + v.shape[2:])
        return [o.replace(sums={k: v[0] for k, v in o.sums.items()}, examples=o.examples[0],
                          per_example=jax.tree.map(merge, o.per_example),
                          mask=None if o.mask is None else merge(o.mask))
                for o in jax.device_get(outputs)]

    def _spec(self, batch_size: int, train: bool, lead: tuple) -> Batch:
        spec = self.workload.batch_spec(batch_size, train=train)
        return {k: jax.ShapeDtypeStruct(lead + tuple(s.shape), s.dtype) for k, s in spec.items()}

    def put(self, host_batch: Batch, stacked: bool) -> Batch:
        """[K, B, ...] (`stacked`) or [B, ...] -> [devices, K, B/devices, ...] /
        [devices, B/devices, ...]."""

        def split(x):
            x = np.asarray(x)
            if stacked:
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


def create(workload: Workload, mesh: jax.sharding.Mesh) -> JitEngine | PmapEngine:
    """The engine `config.run.parallelism` names."""
    if workload.config.run.parallelism == "pmap":
        return PmapEngine(workload, mesh)
    return JitEngine(workload, mesh)
