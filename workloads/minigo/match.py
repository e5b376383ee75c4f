"""Evaluation games: the trained network (greedy MCTS, no noise) against the target, half of the
games with each colour. The win rate is MLPerf's `eval_accuracy` for MiniGo (the reference's
`evaluate` plays `eval_games` against its target model and gates at `gating_win_rate` 0.5).

`ModelEvaluator`: the target is a network (the full config: the reference's frozen target model,
converted; smoke: a frozen random one); both sides search on device, the whole match is one
compiled `lax.scan`. `GnuGoEvaluator`: the target is GNU Go over GTP (the mini); our moves are
one batched device search per ply, the engine's come from one `gnugo` process per game.
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from tpubench.errors import UsageError
from workloads.minigo import gtp, play


class Evaluator(Protocol):
    def compile(self) -> None:
        """Untimed: compile every device function the match uses."""

    def win_rate(self, variables: Any, rng: jax.Array) -> float:
        """Our share of won games (the network being trained)."""


def _colours(games: int) -> np.ndarray:
    """Our colour per game: black (0) in the first half, white (1) in the second."""
    return (np.arange(games) >= games // 2).astype(np.int32)


class ModelEvaluator:
    """Network vs frozen network, all on device."""

    def __init__(self, env, apply, settings: play.SearchSettings, games: int, target: Any,
                 max_moves: int, variables_like: Any):
        self.target, self.games, self.like = target, games, variables_like
        ours = jnp.asarray(_colours(games))

        def match(variables, target, rng):
            state = jax.vmap(env.init)(jax.random.split(rng, games))
            me = state._player_order[jnp.arange(games), ours]

            def ply(state, key):
                a = play.greedy_move(env, apply, variables, state, key, settings)
                b = play.greedy_move(env, apply, target, state, key, settings)
                action = jnp.where(state.current_player == me, a, b)
                nxt = jax.vmap(env.step)(state, action)
                return nxt, nxt.rewards[jnp.arange(games), me]

            _, rewards = jax.lax.scan(ply, state, jax.random.split(rng, max_moves))
            return jnp.sum(rewards.sum(0) > 0)  # games won (an exact count)

        self._match = jax.jit(match)
        self._compiled = None

    def compile(self) -> None:
        self._compiled = self._match.lower(self.like, self.target, jax.random.PRNGKey(0)).compile()

    def win_rate(self, variables: Any, rng: jax.Array) -> float:
        fn = self._compiled or self._match
        return int(fn(variables, self.target, rng)) / self.games


class GnuGoEvaluator:
    """Network vs GNU Go (`gnugo --level L --chinese-rules --capture-all-dead`) over GTP."""

    def __init__(self, env, apply, settings: play.SearchSettings, games: int, board_size: int,
                 komi: float, level: int, max_moves: int, variables_like: Any):
        self.games, self.size, self.komi, self.level = games, board_size, komi, level
        self.max_moves, self.like = max_moves, variables_like
        gtp.find_gnugo()
        self._init = jax.jit(jax.vmap(env.init))
        self._step = jax.jit(jax.vmap(env.step))
        self._move = jax.jit(lambda v, s, k: play.greedy_move(env, apply, v, s, k, settings))
        self._compiled = None

    def compile(self) -> None:
        state = self._init(jax.random.split(jax.random.PRNGKey(0), self.games))
        self._compiled = self._move.lower(self.like, state, jax.random.PRNGKey(0)).compile()
        self._step.lower(state, jnp.zeros(self.games, jnp.int32)).compile()

    def win_rate(self, variables: Any, rng: jax.Array) -> float:
        return float(np.mean(self.wins(variables, rng)))

    def wins(self, variables: Any, rng: jax.Array) -> np.ndarray:
        """Per game, did we win ([games] bool; our colour: black in the first half)."""
        ours = _colours(self.games)
        names = ("black", "white")
        key_init, rng = jax.random.split(rng)
        state = self._init(jax.random.split(key_init, self.games))
        me = np.asarray(state._player_order)[np.arange(self.games), ours]
        engines = [gtp.GnuGo(self.size, self.komi, self.level, seed=i)
                   for i in range(self.games)]
        move = self._compiled or self._move
        total = np.zeros(self.games)
        try:
            for ply in range(self.max_moves):
                done = np.asarray(state.terminated)
                if done.all():
                    break
                colour = ply % 2  # every game is at the same ply
                mine = np.asarray(move(variables, state, jax.random.fold_in(rng, ply)))
                legal = np.asarray(state.legal_action_mask)
                actions = np.zeros(self.games, np.int32)
                for g, engine in enumerate(engines):
                    if done[g]:
                        continue
                    if ours[g] == colour:
                        actions[g] = mine[g]
                        engine.play(names[colour], int(mine[g]))
                    else:
                        actions[g] = engine.genmove(names[colour])
                        if not legal[g, actions[g]]:
                            raise gtp.IllegalEngineMove(
                                f"GNU Go played {gtp.vertex(actions[g], self.size)} in game {g} "
                                f"at move {ply + 1}, an illegal move on the board both sides "
                                "share (an occupied point, a suicide, or a positional-superko "
                                "repetition, which pgx forbids and GNU Go, checking simple ko "
                                "only, may play). The match is stopped. If the program on PATH "
                                "as `gnugo` is GNU Go, rerun with another --config.run.seed.")
                state = self._step(state, jnp.asarray(actions))
                total += np.asarray(state.rewards)[np.arange(self.games), me]
        finally:
            for engine in engines:
                engine.close()
        return total > 0


def load_target(path: str, variables_like: Any) -> Any:
    """The target model's variables from an .npz of '/'-joined paths (`convert.py` writes it);
    `UsageError` when a leaf is missing or has another shape than this config's network."""
    try:
        with np.load(path) as data:
            stored = dict(data)
    except (OSError, ValueError) as e:
        raise UsageError(
            f"minigo: the target model {path} is not an .npz of arrays ({e}). Write it with "
            "`python -m workloads.minigo.convert` (the reference's checkpoint) or "
            "`match.save_target` (a frozen run).") from e
    flat, treedef = jax.tree_util.tree_flatten_with_path(variables_like)
    leaves = []
    for keypath, like in flat:
        name = "/".join(str(getattr(k, "key", k)) for k in keypath)
        if name not in stored:
            raise UsageError(
                f"minigo: the target model {path} has no {name!r}; it was written for another "
                "network. Convert the target for this config's model (board size, conv_width, "
                "trunk_layers, fc_width).")
        if tuple(stored[name].shape) != tuple(like.shape):
            raise UsageError(
                f"minigo: the target model {path} holds {name!r} of shape "
                f"{tuple(stored[name].shape)}, this config's network needs {tuple(like.shape)}. "
                "Use the target converted for this board size and network width/depth.")
        leaves.append(jnp.asarray(stored[name], like.dtype))
    return jax.tree_util.tree_unflatten(treedef, leaves)


def save_target(path: str, variables: Any) -> None:
    """Write `variables` in the .npz layout `load_target` reads (a frozen checkpoint target)."""
    flat, _ = jax.tree_util.tree_flatten_with_path(variables)
    np.savez(path, **{"/".join(str(getattr(k, "key", k)) for k in kp): np.asarray(v)
                      for kp, v in flat})
