"""MiniGo against GNU Go (Debian package `gnugo`, which .ci/run installs): pgx's rules score
finished games exactly as GNU Go does, and the GTP vertex mapping round-trips."""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pgx._src.games import go as pgx_go  # the area count behind pgx's rewards

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from workloads.minigo import gtp, match, play

try:
    gtp.find_gnugo()
    HAVE_GNUGO = True
except UsageError:
    HAVE_GNUGO = False
needs_gnugo = pytest.mark.skipif(not HAVE_GNUGO, reason="gnugo is not installed "
                                 "(apt-get install -y gnugo; .ci/run does it)")

SIZE, KOMI = 7, 7.5


def test_gtp_vertices_round_trip_and_skip_i():
    """Bites: a column alphabet with "I" made J1 map to the ninth column's neighbour."""
    for size in (5, 9, 19):
        for a in range(size * size + 1):
            assert gtp.action(gtp.vertex(a, size), size) == a
    assert gtp.vertex(8, 9) == "J9" and gtp.vertex(9 * 9 - 1, 9) == "J1"
    assert gtp.vertex(81, 9) == "pass"


def _play_out(seed: int):
    """One game GNU Go plays against itself from 4 random opening stones, to two passes; every
    move mirrored into pgx. Returns (pgx final state, GNU Go's score: black's margin)."""
    env = play.make_env(SIZE, KOMI)
    step = jax.jit(env.step)
    state = env.init(jax.random.PRNGKey(seed))
    rng = np.random.default_rng(seed)
    colours = ("black", "white")
    with gtp.GnuGo(SIZE, KOMI, level=0, seed=seed) as engine:
        for ply in range(4 * SIZE * SIZE):
            colour = colours[ply % 2]
            if ply < 4:
                legal = np.flatnonzero(np.asarray(state.legal_action_mask)[:-1])
                move = int(rng.choice(legal))
                engine.play(colour, move)
            else:
                move = engine.genmove(colour)
                assert bool(state.legal_action_mask[move]), (seed, ply, move)
            state = step(state, jnp.int32(move))
            if bool(state.terminated):
                break
        return state, engine.final_score()


@needs_gnugo
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pgx_scores_finished_games_as_gnu_go_does(seed):
    """Area score (stones + surrounded points - komi) and winner agree with GNU Go's
    `final_score` (Chinese rules; dead stones captured before passing).

    Bites: GNU Go without --capture-all-dead left dead stones that Tromp-Taylor counts as
    alive: all three margins disagreed (e.g. -4.5 vs -8.5)."""
    state, gnugo_margin = _play_out(seed)
    assert bool(state.terminated)
    black, white = np.asarray(pgx_go._count_scores(state._x, SIZE))
    margin = float(black) - float(white) - KOMI
    assert margin == gnugo_margin
    black_id = int(state._player_order[0])
    assert (float(state.rewards[black_id]) > 0) == (gnugo_margin > 0)


FAKE_ENGINE = '''#!{python}
"""A GTP engine that answers every genmove with {answer}."""
import sys
last = None
for line in sys.stdin:
    words = line.split()
    reply = ""
    if words and words[0] == "play" and words[2].lower() != "pass":
        last = words[2]
    elif words and words[0] == "genmove":
        reply = {answer_expr}
        last = reply
    elif words and words[0] == "quit":
        print("= \\n", flush=True)
        break
    print("= " + reply + "\\n", flush=True)
'''


def _fake_gnugo(tmp_path, monkeypatch, answer: str, answer_expr: str) -> None:
    script = tmp_path / "gnugo"
    script.write_text(FAKE_ENGINE.format(python=sys.executable, answer=answer,
                                         answer_expr=answer_expr))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert gtp.find_gnugo() == str(script)


@pytest.fixture(scope="module")
def smoke():
    w = registry.create(config_lib.load("minigo", "smoke"))
    return w, w.init_variables(jax.random.PRNGKey(0))


def _match(smoke):
    w, variables = smoke
    evaluator = match.GnuGoEvaluator(w.env, w.apply, w.settings(2, noise=False), 2, 5, 0.5, 0,
                                     w.max_moves, variables)
    return evaluator.win_rate(variables, jax.random.PRNGKey(0))


def test_an_illegal_move_from_the_engine_stops_the_match_with_a_clear_error(
        smoke, tmp_path, monkeypatch):
    """A fake engine that answers with the last stone played (an occupied point) by its second
    move at the latest: `IllegalEngineMove` naming the vertex, the game and the move.

    Bites: without the legality check the move reached pgx, which plays an illegal action as
    a loss for the mover: the match would end with a win rate instead of an error (not tried)."""
    _fake_gnugo(tmp_path, monkeypatch, "the last stone played (occupied)",
                'last or "C3"')
    with pytest.raises(gtp.IllegalEngineMove, match=r"GNU Go played [A-E][1-5] in game [01] at "
                                                    r"move \d+, an illegal move"):
        _match(smoke)


def test_an_answer_that_is_no_vertex_is_a_clear_error(smoke, tmp_path, monkeypatch):
    """Bites: the earlier parser (COLUMNS.index, no bounds) raised a bare ValueError on "Z9" and
    read an off-board vertex as another point (by reading the code; not tried)."""
    _fake_gnugo(tmp_path, monkeypatch, "Z9 (off the board)", '"Z9"')
    with pytest.raises(gtp.IllegalEngineMove, match=r"answered 'Z9', not a vertex of a 5x5"):
        _match(smoke)
