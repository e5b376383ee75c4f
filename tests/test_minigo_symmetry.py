"""MiniGo's training augmentation (workloads/minigo/symmetry.py): the board's 8 symmetries map
a position and its policy target together, and the loss trains on them (issue 14)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from workloads.minigo import play, symmetry

N = 5
# An opening with no symmetry of its own, and the capture it sets up (tests/test_minigo.py).
MOVES = [(1, 2), (2, 2), (2, 1), (3, 2), (2, 3), (0, 0), (3, 1), (0, 4), (3, 3), (4, 4)]
CAPTURE = (4, 2)


def _numpy_symmetry(r: int, c: int, k: int) -> tuple[int, int]:
    """Where point (r, c) goes under symmetry k, by numpy on a one-hot board (independent of
    the jax code: np.rot90 then np.swapaxes)."""
    board = np.zeros((N, N))
    board[r, c] = 1
    board = np.rot90(board, k % 4)
    if k >= 4:
        board = board.T
    return tuple(int(i) for i in np.argwhere(board)[0])


ENV = play.make_env(N, 0.5)
_replay = jax.jit(lambda actions: jax.lax.scan(
    lambda s, a: (ENV.step(s, a), None), ENV.init(jax.random.PRNGKey(0)), actions)[0])


def _play(moves):
    """pgx's state after `moves`, in one compiled call (eager pgx steps are slow)."""
    return _replay(jnp.asarray([r * N + c for r, c in moves], jnp.int32))


def test_each_symmetry_maps_a_position_and_its_policy_target_together():
    """For each of the 8 symmetries: the transformed observation is pgx's observation of the
    game played with the transformed moves (history planes included), and the policy target
    on the capture point moves to the transformed capture point; the 8 images are distinct.

    Bites: flattening the policy column-major in transform_policy (`.T` after the reshape)
    failed the policy check at k=1; dropping the transpose for k >= 4 (rotations only, each
    twice) failed it too."""
    obs = _play(MOVES).observation
    target = jnp.zeros(N * N + 1).at[CAPTURE[0] * N + CAPTURE[1]].set(1.0)
    images = []
    for k in range(symmetry.NUM_SYMMETRIES):
        moved = [_numpy_symmetry(r, c, k) for r, c in MOVES]
        want = _play(moved).observation
        got = jax.jit(symmetry.transform_board)(obs, jnp.int32(k))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=f"k={k}")
        r, c = _numpy_symmetry(*CAPTURE, k)
        policy = jax.jit(symmetry.transform_policy, static_argnums=2)(target, jnp.int32(k), N)
        assert int(jnp.argmax(policy)) == r * N + c, k
        images.append(np.asarray(got).tobytes())
    assert len(set(images)) == symmetry.NUM_SYMMETRIES


def test_pass_stays_pass_and_each_example_gets_its_own_symmetry():
    """The pass entry of the policy is never moved; a batch of one repeated position comes
    out under several different symmetries (one draw per example, not one per batch).

    Bites: drawing one k for the whole batch (`randint(rng, (), ...)`) failed the count."""
    obs = _play(MOVES).observation
    batch = jnp.broadcast_to(obs, (32,) + obs.shape)
    policy = jnp.broadcast_to(jnp.linspace(0.0, 1.0, N * N + 1), (32, N * N + 1))
    x, p = jax.jit(symmetry.random_symmetry)(jax.random.PRNGKey(0), batch, policy)
    np.testing.assert_array_equal(np.asarray(p[:, -1]), np.ones(32))
    assert len({np.asarray(row).tobytes() for row in x}) >= 6


def test_the_training_loss_sees_the_augmented_batch():
    """With data.random_rotation the loss on a batch equals the loss without it on the batch
    transformed by random_symmetry(rng): the augmentation is applied, with the step's rng.

    Bites: leaving the `if self.config.data.random_rotation:` block out of loss() failed it."""
    on = registry.create(config_lib.load("minigo", "smoke"))
    off = registry.create(config_lib.load("minigo", "smoke", {"data.random_rotation": False}))
    params, model_state = nn.meta.unbox(on.init(jax.random.PRNGKey(0)))
    obs = _play(MOVES).observation.astype(jnp.float32)
    batch = {"inputs": jnp.stack([obs] * 8),
             "policy": jax.nn.one_hot(jnp.arange(8) * 3, N * N + 1),
             "outcome": jnp.linspace(-1.0, 1.0, 8)}
    rng = jax.random.PRNGKey(5)
    x, p = symmetry.random_symmetry(rng, batch["inputs"], batch["policy"])
    assert not np.array_equal(np.asarray(x), np.asarray(batch["inputs"]))  # not vacuous
    loss_on, _ = on.loss(params, model_state, batch, rng)
    loss_off, _ = off.loss(params, model_state, dict(batch, inputs=x, policy=p), rng)
    np.testing.assert_allclose(float(loss_on), float(loss_off), rtol=1e-5)
