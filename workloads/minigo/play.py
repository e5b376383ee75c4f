"""Go games on device: pgx's vectorised Go rules, mctx's batched MCTS, the network as its prior.

Every function here is pure and jittable over a batch of games. The search is AlphaGo Zero's
PUCT MCTS (`mctx.muzero_policy` with pgx's `step` as the exact model), as the v0.7 reference's
`cc/mcts_player.cc` runs it: `num_readouts` simulations per move, Dirichlet noise at the root
in self-play (alpha 0.03 on 19x19, weight 0.25: the reference's `dirichlet_alpha` and
`noise_mix` flags), moves sampled in proportion to visit counts for the opening
(`softpick_move_cutoff`) and the most-visited move afterwards.

Value convention: the network's value is for the player to move; a terminal step's reward is
for the player who moved (+1 win, -1 loss), and the tree alternates sign (`discount = -1`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx
import pgx.go

Apply = Callable[[Any, jax.Array], tuple[jax.Array, jax.Array]]  # (vars, obs) -> (logits, value)


def make_env(board_size: int, komi: float) -> pgx.go.Go:
    """pgx Go: Tromp-Taylor area scoring with `komi`, positional superko, 8 history planes."""
    return pgx.go.Go(size=board_size, komi=komi)


class SearchSettings(NamedTuple):
    """`kind`: "puct" (AlphaGo Zero's and the reference's search: `mctx.muzero_policy`, Q in
    [-1, 1] min-max normalised, an unvisited child counted as a loss: the
    reference's `value_init_penalty` 2.0, "init to loss") or "gumbel" (Gumbel
    MuZero, `mctx.gumbel_muzero_policy`: sequential halving over sampled root moves, made to
    improve the policy with few simulations: the CPU mini's search)."""

    num_simulations: int
    dirichlet_alpha: float = 0.03
    dirichlet_fraction: float = 0.25  # 0 = no root noise (evaluation games)
    kind: str = "puct"


def _masked_logits(logits: jax.Array, legal: jax.Array) -> jax.Array:
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


def search(env: pgx.go.Go, apply: Apply, variables: Any, state: pgx.State, rng: jax.Array,
           settings: SearchSettings) -> mctx.PolicyOutput:
    """Batched MCTS from `state` (a batch of games): the policy output of `mctx.muzero_policy`
    (`action_weights` = normalised visit counts of the root's children)."""
    logits, value = apply(variables, state.observation)

    def recurrent_fn(params, key, action, embedding):
        del key
        prev = embedding
        nxt = jax.vmap(env.step)(prev, action)
        logits, value = apply(params, nxt.observation)
        mover = prev.current_player
        reward = nxt.rewards[jnp.arange(nxt.rewards.shape[0]), mover]
        value = jnp.where(nxt.terminated, 0.0, value)
        discount = jnp.where(nxt.terminated, 0.0, -1.0)
        out = mctx.RecurrentFnOutput(reward=reward, discount=discount,
                                     prior_logits=_masked_logits(logits, nxt.legal_action_mask),
                                     value=value)
        return out, nxt

    root = mctx.RootFnOutput(prior_logits=_masked_logits(logits, state.legal_action_mask),
                             value=value, embedding=state)
    if settings.kind == "gumbel":
        return mctx.gumbel_muzero_policy(
            params=variables, rng_key=rng, root=root, recurrent_fn=recurrent_fn,
            num_simulations=settings.num_simulations, invalid_actions=~state.legal_action_mask,
            max_num_considered_actions=state.legal_action_mask.shape[-1])
    return mctx.muzero_policy(
        params=variables, rng_key=rng, root=root, recurrent_fn=recurrent_fn,
        num_simulations=settings.num_simulations,
        invalid_actions=~state.legal_action_mask,
        dirichlet_alpha=settings.dirichlet_alpha,
        dirichlet_fraction=settings.dirichlet_fraction,
        qtransform=functools.partial(mctx.qtransform_by_min_max, min_value=-1.0, max_value=1.0))


class Games(NamedTuple):
    """Self-play records, time-major: [T, B, ...]; `valid` is False after a game ended."""

    observation: jax.Array  # [T, B, N, N, 17]
    policy: jax.Array  # [T, B, N*N+1] MCTS visit distribution (the policy target)
    outcome: jax.Array  # [T, B] final result for the player to move then (+1/-1/0)
    valid: jax.Array  # [T, B] bool
    black_wins: jax.Array  # [B] bool (pgx rewards of the finished games)
    length: jax.Array  # [B] moves played


def selfplay(env: pgx.go.Go, apply: Apply, variables: Any, rng: jax.Array, num_games: int,
             max_moves: int, settings: SearchSettings, softpick_moves: int) -> Games:
    """`num_games` self-play games of at most `max_moves` moves each, all on device."""
    init_key, rng = jax.random.split(rng)
    state = jax.vmap(env.init)(jax.random.split(init_key, num_games))
    batch = jnp.arange(num_games)

    def move(carry, key):
        state, total, length = carry
        k_search, k_pick = jax.random.split(key)
        out = search(env, apply, variables, state, k_search, settings)
        weights = out.action_weights
        sampled = jax.random.categorical(k_pick, jnp.log(jnp.maximum(weights, 1e-30)))
        greedy = jnp.argmax(weights, axis=-1)
        action = jnp.where(state._step_count < softpick_moves, sampled, greedy)
        live = ~state.terminated
        record = (state.observation, weights, state.current_player, live,
                  state._x.color)
        nxt = jax.vmap(env.step)(state, action)
        return (nxt, total + nxt.rewards, length + live), record

    keys = jax.random.split(rng, max_moves)
    zeros = jnp.zeros((num_games, 2), jnp.float32)
    (state, total, length), (obs, pol, player, live, _) = jax.lax.scan(
        move, (state, zeros, jnp.zeros(num_games, jnp.int32)), keys)
    outcome = jnp.take_along_axis(total[None], player[..., None], axis=-1)[..., 0]
    # Black's player id is the player whose colour is 0 at the first move.
    black_id = state._player_order[:, 0]
    black_wins = total[batch, black_id] > 0
    return Games(obs, pol, outcome, live, black_wins, length)


def greedy_move(env: pgx.go.Go, apply: Apply, variables: Any, state: pgx.State, rng: jax.Array,
                settings: SearchSettings) -> jax.Array:
    """An evaluation game's move, [B] actions: PUCT's most-visited move without root noise;
    Gumbel's own choice (its sampled Gumbel noise keeps evaluation games apart: without it,
    two deterministic players would replay one game per colour)."""
    out = search(env, apply, variables, state, rng, settings._replace(dirichlet_fraction=0.0))
    if settings.kind == "gumbel":
        return out.action
    return jnp.argmax(out.action_weights, axis=-1)
