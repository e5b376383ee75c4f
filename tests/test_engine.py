"""The jit engine's init work (issue 10.7): one trace of the model per process for the FLOP
count and every dispatch, one trace of its init, and results identical to a plain jitted step."""

import jax
import numpy as np

from tpubench import config as config_lib
from tpubench import mesh as mesh_lib
from tpubench import registry
from tpubench.loops import engine as engine_lib
from tpubench.loops import steps

# The smoke ResNet cut to 2 stages (compiles in seconds), as in tests/test_fit.py.
SMALL = {"model.stage_sizes": (1, 1), "model.num_filters": 8, "model.stem": "small",
         "data.image_size": 16, "data.image_channels": 3, "model.num_classes": 10,
         "optimizer.name": "lars", "data.global_batch_size": 8, "eval.batch_size": 8,
         "model.dtype": "float32"}


def _counting_engine(**overrides):
    """A JitEngine whose workload counts how often its loss and init run (= are traced)."""
    cfg = config_lib.load("resnet", "smoke", {**SMALL, **overrides})
    workload = registry.create(cfg)
    calls = {"loss": 0, "init": 0}
    loss, init = workload.loss, workload.init

    def counted_loss(*args):
        calls["loss"] += 1
        return loss(*args)

    def counted_init(*args):
        calls["init"] += 1
        return init(*args)

    workload.loss, workload.init = counted_loss, counted_init
    return engine_lib.JitEngine(workload, mesh_lib.build_mesh(cfg)), calls


def _batch(eng, k: int, seed: int = 0):
    spec = eng.workload.batch_spec(eng.config.data.global_batch_size, train=True)
    rng = np.random.default_rng(seed)
    return {name: (rng.integers(0, 10, (k, *s.shape)).astype(s.dtype)
                   if np.issubdtype(s.dtype, np.integer)
                   else rng.standard_normal((k, *s.shape)).astype(s.dtype))
            for name, s in spec.items()}


def test_the_train_step_is_traced_once_for_the_flop_count_and_every_dispatch():
    """engine.compile traces the model's loss once, however many dispatch sizes it compiles
    (the K-step dispatch, a remainder size, the FLOP count), real or synthetic input; the model's
    init is traced once for the abstract state and the initialised state together.
    Bites: a fresh `jax.jit(train_step)` for the FLOP count (the old code; tried): 2 loss
    traces; `jax.eval_shape` on the plain init function in __init__ (tried): 2 init traces."""
    for synthetic in (False, True):
        eng, calls = _counting_engine()
        compiled = eng.compile(3, synthetic=synthetic, other_sizes=(1, 2))
        assert set(compiled.train_by_size) == {1, 2}
        assert calls["loss"] == 1, (synthetic, calls)
        assert compiled.flops_per_step > 1e6
    eng.init_state(0)
    assert calls["init"] == 1, calls


def test_dispatches_compute_exactly_what_a_plain_jitted_step_computes():
    """The dispatches call the shared train-step jit nested in their own; XLA inlines it, so the
    state after a 1-step dispatch is bitwise the one a plain `jax.jit(train_step)` gives, after a
    3-step one the same up to XLA's rounding inside a loop, and the FLOP count is that of the
    plain step's lowering.
    Bites: the dispatch scanning its K batches in reverse order (tried): the states differ."""
    eng, _ = _counting_engine()
    compiled = eng.compile(3, synthetic=False, other_sizes=(1,))
    plain = jax.jit(steps.make_train_step(eng.workload))
    state_in = mesh_lib.with_shardings(eng.abstract_state, eng.state_shardings)
    batch_in = {k: jax.ShapeDtypeStruct(v.shape[1:], v.dtype, sharding=eng.batch_sharding)
                for k, v in _batch(eng, 1).items()}
    with eng.context():
        from tpubench.platform import perf

        assert compiled.flops_per_step == perf.flops_of(plain.lower(state_in, batch_in))
        for k in (1, 3):
            block = _batch(eng, k, seed=k)
            ref = eng.init_state(0)
            for i in range(k):
                ref, metrics = plain(ref, eng.put({n: v[i] for n, v in block.items()},
                                                  stacked=False))
            got, dispatch_metrics = compiled.dispatch(k)(eng.init_state(0),
                                                         eng.put(block, stacked=True))
            for a, b in zip(jax.tree.leaves(ref), jax.tree.leaves(got), strict=True):
                if k == 1:  # no loop: the inlined step is the plain step, bit for bit
                    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
                else:  # inside lax.scan XLA fuses differently (measured: <= 2e-9 apart)
                    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4,
                                               atol=1e-7)
            assert float(dispatch_metrics["last_loss"]) == float(metrics["loss"])


def test_put_places_one_process_batches_like_make_array_from_process_local_data():
    """The one-process fast path of `put` gives the arrays, dtypes and shardings JAX's general
    path gives. Bites: the stacked batch placed with the unstacked sharding (tried)."""
    eng, _ = _counting_engine()
    for stacked, host in ((True, _batch(eng, 2)), (False, {k: v[0] for k, v in _batch(
            eng, 1).items()})):
        got = eng.put(host, stacked=stacked)
        sharding = eng.stacked_sharding if stacked else eng.batch_sharding
        for k, v in host.items():
            ref = jax.make_array_from_process_local_data(sharding, v)
            assert got[k].sharding == ref.sharding and got[k].dtype == ref.dtype
            np.testing.assert_array_equal(np.asarray(got[k]), v)
