"""MiniGo: the full network's size, the search on a hand-built forced capture, self-play's
bookkeeping, the generation loop through the harness (smoke) and its MLPerf log, bad input.
GNU Go (scoring, the mini's opponent): tests/test_minigo_gnugo.py."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.loops import run as train
from tpubench.loops import steps
from tpubench.mlperf import mllog
from workloads.minigo import gtp, match, play

CAPTURE = 22  # (row 4, col 2): the last liberty of the white pair in `_capture_position`


def _full_param_count(n: int = 19, w: int = 64, fc: int = 64, blocks: int = 6) -> int:
    """dual_net.py by hand: stem, 2 convs per block, the stem's and trunk's BN offsets and
    scales (the heads' BN have neither), both heads."""
    convs = 17 * 9 * w + blocks * 2 * 9 * w * w + w * 2 + w * 1
    bn = (1 + 2 * blocks) * w * 2
    policy_fc = 2 * n * n * (n * n + 1) + (n * n + 1)
    value_fc = n * n * fc + fc + fc + 1
    return convs + bn + policy_fc + value_fc


def test_full_network_has_the_dual_net_parameter_count():
    """738,975 parameters at 19x19, 64 filters, 6 residual blocks, fc 64 (by hand above).

    Bites: a bias on the convolutions (use_bias=True) added 64-per-conv params and failed;
    so did the earlier model's BN without scale everywhere (738,146)."""
    w = registry.create(config_lib.load("minigo", "full"))
    assert _full_param_count() == 738_975
    assert steps.param_count(w) == 738_975


def _capture_position(env):
    """5x5, black to move; the white pair at (2,2),(3,2) has one liberty left, (4,2): capture
    now, or white extends there and escapes."""
    moves = [(1, 2), (2, 2), (2, 1), (3, 2), (2, 3), (0, 0), (3, 1), (0, 4), (3, 3), (4, 4)]
    state = env.init(jax.random.PRNGKey(0))
    for r, c in moves:
        state = env.step(state, jnp.int32(r * 5 + c))
    return jax.tree.map(lambda x: x[None], state)


def _material(variables, obs):
    """A uniform prior and a material value for the player to move (planes 0/1 are the mover's
    and the opponent's stones now)."""
    del variables
    diff = obs[..., 0].sum((1, 2)) - obs[..., 1].sum((1, 2))
    return jnp.zeros(obs.shape[:1] + (26,)), jnp.tanh(diff / 3.0)


@pytest.mark.parametrize("kind,sims", [("gumbel", 32), ("puct", 256)])
def test_search_plays_the_forced_capture(kind, sims):
    """With no hint in the prior, the search's policy picks the capturing move.

    Bites: discount +1 instead of -1 in play.search (the opponent's value counted as ours)
    made both searches pick another move."""
    env = play.make_env(5, 0.5)
    state = _capture_position(env)
    assert bool(state.legal_action_mask[0, CAPTURE]) and int(state._x.color[0]) == 0
    out = play.search(env, _material, None, state, jax.random.PRNGKey(1),
                      play.SearchSettings(sims, dirichlet_fraction=0.0, kind=kind))
    assert int(jnp.argmax(out.action_weights[0])) == CAPTURE
    nxt = env.step(jax.tree.map(lambda x: x[0], state), jnp.int32(CAPTURE))
    assert int((nxt._x.board < 0).sum()) == 3  # the pair is gone: white keeps its 3 others


def test_selfplay_outcomes_are_each_movers_result():
    """Every recorded position's target is the game's result for the player to move then:
    +1 at move 1 iff black won, the sign alternating move by move.

    Bites: taking the outcome of player 0 for every position (not the mover's) failed."""
    cfg = config_lib.load("minigo", "smoke")
    w = registry.create(cfg)
    variables = w.init_variables(jax.random.PRNGKey(0))
    games = jax.jit(lambda v, k: play.selfplay(w.env, w.apply, v, k, 6, w.max_moves,
                                               w.settings(2, noise=True), 2))(
        variables, jax.random.PRNGKey(3))
    outcome, valid = np.asarray(games.outcome), np.asarray(games.valid)
    black = np.asarray(games.black_wins)
    np.testing.assert_array_equal(outcome[0], np.where(black, 1.0, -1.0))
    for g in range(6):
        n = int(games.length[g])
        assert valid[:n, g].all() and not valid[n:, g].any()
        np.testing.assert_array_equal(outcome[1:n, g], -outcome[: n - 1, g])


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("minigo") / "run"
    return train.train_and_evaluate(config_lib.load("minigo", "smoke"), workdir), workdir


def _events(workdir) -> list[dict]:
    lines = (workdir / "mlperf_log.txt").read_text().splitlines()
    return [json.loads(line.split(":::MLLOG ", 1)[1]) for line in lines if ":::MLLOG" in line]


def test_smoke_generation_runs_through_the_harness(smoke_run):
    """One generation: 4 games self-played, 2 train steps of 8, eval_accuracy = the win rate of
    2 evaluation games (0, 0.5 or 1), logged with its generation.

    Bites: eval_accuracy logged with epoch_num = generation - 1 failed the log check."""
    s, workdir = smoke_run
    assert s["generations"] == 1 and s["steps"] == 2 and s["games"] == 4
    assert s["final_quality"] in (0.0, 0.5, 1.0)
    assert s["status"] == ("success" if s["final_quality"] >= 0.5 else "aborted")
    events = _events(workdir)
    acc = [e for e in events if e["key"] == "eval_accuracy"]
    assert [(e["value"], e["metadata"]["epoch_num"]) for e in acc] == [(s["final_quality"], 1)]
    rec = json.loads((workdir / "metrics.jsonl").read_text().splitlines()[0])
    assert 4 <= rec["positions"] <= 4 * 50 and rec["window"] == rec["positions"]
    assert rec["win_rate"] == s["final_quality"]


def test_smoke_generation_writes_tensorboard_as_the_supervised_loop(smoke_run):
    """MiniGo's metrics go to TensorBoard too (the writers both loops share), with the same
    scalars and step as metrics.jsonl, and summary.json names both files.

    Bites: the self-play loop writing only metrics.jsonl (its own JSONL writer, before the
    writers were shared) leaves no events to read back."""
    from tensorboard.backend.event_processing import event_accumulator

    s, workdir = smoke_run
    assert s["metrics"] == {"jsonl": str(workdir / "metrics.jsonl"),
                            "tensorboard": str(workdir / "tensorboard")}
    rec = json.loads((workdir / "metrics.jsonl").read_text().splitlines()[0])
    acc = event_accumulator.EventAccumulator(str(workdir / "tensorboard"))
    acc.Reload()
    for tag in ("win_rate", "positions", "loss"):
        events = acc.Scalars(tag)
        assert [e.step for e in events] == [rec["step"]] == [s["steps"]]
        assert events[0].value == pytest.approx(rec[tag], rel=1e-6)


def test_smoke_log_carries_the_minigo_keys_and_passes_the_checker_but_for_quality(smoke_run):
    """closed_minigo.yaml's keys with the config's values; the official checker fails at most
    the win-rate target: it must fail it when the toy lost both games (status aborted).

    Bites: leaving out min_selfplay_games_per_generation failed the key count."""
    s, workdir = smoke_run
    events = _events(workdir)
    values = {}
    for e in events:
        values.setdefault(e["key"], []).append(e["value"])
    assert values["train_batch_size"] == [8]
    assert values["lr_boundaries"] == [[128, 10000, 20000]]
    assert values["lr_rates"] == [[0.016, 0.16, 0.016, 0.0016]]
    assert values["min_selfplay_games_per_generation"] == [8192]
    assert values["actual_selfplay_games_per_generation"] == [4]
    assert values["submission_benchmark"] == ["minigo"]
    result = mllog.check_compliance(workdir / "mlperf_log.txt")
    failed = [line for line in result.output.splitlines() if "Failed" in line]
    assert all("eval_accuracy" in line for line in failed), result.output
    assert bool(failed) == (s["final_quality"] < 0.5), result.output


def test_missing_gnugo_is_a_usage_error_naming_the_package(tmp_path, monkeypatch):
    """Before anything is written: no workdir, a message naming the `gnugo` package.

    Bites: find_gnugo returning without its None check let the run start (TypeError)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(gtp, "FALLBACK", str(tmp_path / "no_gnugo"))
    cfg = config_lib.load("minigo", "smoke", {"eval.opponent": "gnugo"})
    with pytest.raises(UsageError, match="apt-get install -y gnugo"):
        train.train_and_evaluate(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_target_model_of_the_wrong_shape_is_a_usage_error(tmp_path):
    """A target written for a wider net is refused, naming the leaf and both shapes; the right
    one loads back exactly.

    Bites: comparing only leaf names (not shapes) let the wide target load."""
    small = registry.create(config_lib.load("minigo", "smoke"))
    wide = registry.create(config_lib.load("minigo", "smoke", {"model.conv_width": 16}))
    like = small.init_variables(jax.random.PRNGKey(0))
    match.save_target(str(tmp_path / "wide.npz"), wide.init_variables(jax.random.PRNGKey(1)))
    with pytest.raises(UsageError, match=r"of shape \(16,\), this config.s network needs \(8,\)"):
        match.load_target(str(tmp_path / "wide.npz"), like)
    match.save_target(str(tmp_path / "ok.npz"), like)
    back = match.load_target(str(tmp_path / "ok.npz"), like)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(like), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_bad_target_file_stops_the_run_before_compute(tmp_path):
    """Through the run: a target of another shape, and a file that is no .npz, are refused by
    `check_data` before anything is compiled or written (no workdir).

    Bites: checking only that the file exists (the earlier check_data) let the wide target
    through to make_evaluator, after the self-play and train compiles."""
    wide = registry.create(config_lib.load("minigo", "smoke", {"model.conv_width": 16}))
    match.save_target(str(tmp_path / "wide.npz"), wide.init_variables(jax.random.PRNGKey(1)))
    (tmp_path / "junk.npz").write_text("not an npz")
    for name, message in [("wide.npz", r"of shape \(16,\)"), ("junk.npz", "is not an .npz")]:
        cfg = config_lib.load("minigo", "smoke", {"eval.target_file": str(tmp_path / name)})
        with pytest.raises(UsageError, match=message):
            train.train_and_evaluate(cfg, tmp_path / "run")
        assert not (tmp_path / "run").exists()
