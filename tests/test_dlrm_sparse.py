"""Issue 17.1: DLRM's row-sparse embedding update (workloads/dlrm/sparse.py) is the same SGD
step as the harness's dense one, through warmup, constant and decay, with repeated ids."""

import jax
import numpy as np
import optax
import pytest
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import steps
from workloads.dlrm import sparse


def _trajectory(sparse_update: bool, n: int = 8):
    cfg = config_lib.load("dlrm", "smoke", {"optimizer.sparse_embedding_update": sparse_update})
    w = registry.create(cfg)
    assert (w.train_update_fn() is not None) == sparse_update
    state = nn.meta.unbox(steps.boxed_init_fn(w)(jax.random.PRNGKey(0)))
    step = jax.jit(steps.make_train_step(w))
    losses = []
    for i in range(n):
        batch = w.synthetic_batch(jax.random.PRNGKey(100 + i), 32)
        state, metrics = step(state, batch)
        losses.append(float(metrics["loss"]))
    return state, losses


def test_row_sparse_update_follows_the_dense_sgd_trajectory():
    """8 steps of the smoke DLRM (batch 32, tables of 3-1,000 rows: ids repeat within a batch;
    warmup 2 steps, constant to step 4, then poly-2 decay): every param and loss of the sparse
    step equals the dense step's to float32 rounding, and the tables did move.
    Bites (tried): `.set` instead of `.add` in the scatter (repeated ids lose updates), the
    rate of step + 1 for the tables, and leaving the tables unchanged."""
    dense, dense_losses = _trajectory(False)
    sparse_state, sparse_losses = _trajectory(True)
    np.testing.assert_allclose(sparse_losses, dense_losses, rtol=1e-5)
    init = nn.meta.unbox(steps.boxed_init_fn(registry.create(
        config_lib.load("dlrm", "smoke")))(jax.random.PRNGKey(0)))
    moved = 0
    for path, a in jax.tree_util.tree_leaves_with_path(sparse_state.params):
        b = dict(jax.tree_util.tree_leaves_with_path(dense.params))[path]
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=str(path))
        if "embedding" in str(path):
            before = dict(jax.tree_util.tree_leaves_with_path(init.params))[path]
            moved += int(np.any(np.asarray(a) != np.asarray(before)))
    assert moved == 26
    assert int(sparse_state.step) == int(dense.step) == 8


def test_an_optimizer_with_per_parameter_state_refuses_the_sparse_path():
    sparse.check_stateless(optax.sgd(0.1))
    with pytest.raises(ValueError, match="sparse_embedding_update=false"):
        sparse.check_stateless(optax.sgd(0.1, momentum=0.9))
    with pytest.raises(ValueError, match="sparse_embedding_update=false"):
        sparse.check_stateless(optax.adam(1e-3))
