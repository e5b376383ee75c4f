"""The 8 symmetries of the Go board (rotations and reflections) applied to training examples.

The v0.7 reference trains on every example under a random one of them
(mlcommons/training reinforcement/tensorflow/minigo/train.py: `random_rotation=True` in every
input function; `symmetries.py`: the dihedral group on the features and, with the same
transform, on the policy target, pass left in place). The game, the search and the value are
invariant under them, so the net sees up to 8 distinct positions per self-play position:
without it the mini's few games per generation are memorised game by game (issue 14).

Layout: pgx's observation is [N, N, C] with the board point `a = row * N + col` at [row, col],
and the policy's first N*N entries are the same points in the same order (the last: pass).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

NUM_SYMMETRIES = 8


def transform_board(x: jax.Array, k: jax.Array) -> jax.Array:
    """Symmetry `k` (0..7) of one board-shaped array [N, N, ...]: `k % 4` quarter turns, then
    a transpose of the two board axes when k >= 4 (k = 0 is the identity)."""
    branches = []
    for i in range(NUM_SYMMETRIES):
        def branch(x, i=i):
            y = jnp.rot90(x, i % 4, axes=(0, 1))
            return jnp.swapaxes(y, 0, 1) if i >= 4 else y
        branches.append(branch)
    return jax.lax.switch(k, branches, x)


def transform_policy(policy: jax.Array, k: jax.Array, size: int) -> jax.Array:
    """The same symmetry on one policy vector [N*N + 1]: board moves moved, pass kept."""
    board = transform_board(policy[: size * size].reshape(size, size), k)
    return jnp.concatenate([board.reshape(-1), policy[size * size:]])


def random_symmetry(rng: jax.Array, inputs: jax.Array, policy: jax.Array
                    ) -> tuple[jax.Array, jax.Array]:
    """A batch [B, N, N, C] with its policy targets [B, N*N + 1], each example under its own
    random symmetry (features and target under the same one)."""
    size = inputs.shape[1]
    ks = jax.random.randint(rng, (inputs.shape[0],), 0, NUM_SYMMETRIES)
    inputs = jax.vmap(transform_board)(inputs, ks)
    policy = jax.vmap(lambda p, k: transform_policy(p, k, size))(policy, ks)
    return inputs, policy
