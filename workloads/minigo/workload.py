"""MiniGo (MLPerf `minigo`): reinforcement learning of Go by self-play, the contract only.

The generation loop (self-play -> train on the recent games -> evaluation games) is the
harness's (`tpubench.loops.selfplay`); this module says what a generation plays and learns:

  selfplay   `data.games_per_generation` games of batched MCTS (`workloads/minigo/play.py`:
             pgx rules, mctx search) with the current network, on device; every position
             becomes an example (features, visit distribution, final result).
  augment    each train example under a random one of the board's 8 symmetries
             (`data.random_rotation`, the reference's `random_rotation=True`: symmetry.py).
  loss       the reference's `dual_net.py` loss: policy cross-entropy against the visit
             distribution + `value_cost_weight` * mean squared value error + `l2_strength` *
             the sum of squared weights (`model_fn`, reg_term; biases and BN excluded).
  optimizer  SGD with momentum 0.9 and a piecewise-constant rate (`lr_rates` between
             `lr_boundaries`, in steps, as `dual_net.py`'s `tf.train.piecewise_constant`).
  evaluate   the win rate of greedy MCTS with the trained network against the target: GNU Go
             through GTP (the mini, `eval.opponent="gnugo"`) or a frozen model
             (`eval.opponent="model"`, the reference's way: its target is a trained network).
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import linen as nn

from tpubench.errors import UsageError
from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.loops.selfplay import GenerationWorkload
from tpubench.nn.axes import conv_rules
from tpubench.nn.dtypes import compute_dtype
from workloads.minigo import gtp, match, play, symmetry
from workloads.minigo.model import DualNet
from workloads.minigo.tunables import CLOSED_TUNABLES

FEATURES = 17  # 8 history planes per colour + the colour to play (pgx's and minigo's)


class MiniGoWorkload(GenerationWorkload):
    """The dual network trained on its own self-play games to a win rate against a target."""

    name = "minigo"
    mlperf_name = "minigo"
    closed_tunables = CLOSED_TUNABLES  # what closed division lets an override change

    def __init__(self, config: ml_collections.ConfigDict):
        super().__init__(config)
        d = config.data
        self.env = play.make_env(int(d.board_size), float(d.komi))

    # ---- the network ---------------------------------------------------------------------
    def model(self) -> DualNet:
        m = self.config.model
        return DualNet(board_size=int(self.config.data.board_size), conv_width=m.conv_width,
                       fc_width=m.fc_width, trunk_layers=m.trunk_layers,
                       dtype=compute_dtype(m.dtype, else_float32=True))

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """A 0.7M-parameter net: everything replicated (data parallel only)."""
        return conv_rules(out=None) + (("go_in", None), ("go_out", None))

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        n = int(self.config.data.board_size)
        spec = {
            "inputs": jax.ShapeDtypeStruct((batch_size, n, n, FEATURES), jnp.float32),
            "policy": jax.ShapeDtypeStruct((batch_size, n * n + 1), jnp.float32),
            "outcome": jax.ShapeDtypeStruct((batch_size,), jnp.float32),
        }
        if not train:
            spec["mask"] = jax.ShapeDtypeStruct((batch_size,), jnp.float32)
        return spec

    def apply(self, variables: Any, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Inference: (policy logits, value) with batch-norm running statistics."""
        return self.model().apply(variables, obs.astype(jnp.float32), train=False)

    def _heads_loss(self, logits, value, batch):
        policy_loss = optax.softmax_cross_entropy(logits, batch["policy"])
        value_loss = jnp.square(value - batch["outcome"])
        return policy_loss, value_loss

    def loss(self, params, model_state, batch, rng):
        m = self.config.model
        if self.config.data.random_rotation:  # the reference's training augmentation
            inputs, policy = symmetry.random_symmetry(rng, batch["inputs"], batch["policy"])
            batch = dict(batch, inputs=inputs, policy=policy)
        (logits, value), new_state = self.model().apply(
            {"params": params, **model_state}, batch["inputs"], train=True,
            mutable=["batch_stats"])
        policy_loss, value_loss = self._heads_loss(logits, value, batch)
        l2 = sum(jnp.sum(jnp.square(w)) for path, w in jax.tree_util.tree_leaves_with_path(params)
                 if "kernel" in jax.tree_util.keystr(path))
        loss = policy_loss.mean() + m.value_cost_weight * value_loss.mean() + m.l2_strength * l2
        agree = (jnp.argmax(logits, -1) == jnp.argmax(batch["policy"], -1)).mean()
        return loss, (dict(new_state), {"policy_loss": policy_loss.mean(),
                                        "value_loss": value_loss.mean(),
                                        "policy_agreement": agree})

    def optimizer(self) -> optax.GradientTransformation:
        return optax.sgd(self.learning_rate, momentum=float(self.config.optimizer.momentum))

    def learning_rate(self, step):
        """`lr_rates[i]` while step < `lr_boundaries[i]` (dual_net.py piecewise_constant)."""
        s = self.config.schedule
        rates = jnp.asarray(tuple(s.lr_rates), jnp.float32)
        bounds = jnp.asarray(tuple(s.lr_boundaries), jnp.int32)
        return rates[jnp.sum(jnp.asarray(step) >= bounds)]

    # ---- the harness's supervised contract: a holdout of self-play positions ---------------
    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per position: does the policy's top move match the search's (not the quality of a
        generation run, which is `evaluate`'s win rate)."""
        logits, _ = self.model().apply({"params": params, **model_state}, batch["inputs"],
                                       train=False)
        agree = (jnp.argmax(logits, -1) == jnp.argmax(batch["policy"], -1)).astype(jnp.float32)
        return EvalOutput(sums={"agree": agree})

    def eval_finalize(self, results: EvalResults) -> float:
        return float(results.sums["agree"]) / max(results.examples, 1.0)

    # ---- a generation --------------------------------------------------------------------
    def settings(self, readouts: int, noise: bool) -> play.SearchSettings:
        d = self.config.data
        return play.SearchSettings(int(readouts), float(d.dirichlet_alpha),
                                   float(d.noise_mix) if noise else 0.0, str(d.search))

    def selfplay(self, variables: Any, rng: jax.Array) -> dict[str, jax.Array]:
        """Pure: one generation's games as flat examples plus a `valid` mask and game stats."""
        d = self.config.data
        games = play.selfplay(self.env, self.apply, variables, rng,
                              int(d.games_per_generation), self.max_moves,
                              self.settings(d.num_readouts, noise=True), int(d.softpick_moves))
        flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
        return {"inputs": flat(games.observation).astype(jnp.float32),
                "policy": flat(games.policy), "outcome": flat(games.outcome),
                "valid": flat(games.valid), "black_wins": games.black_wins.mean(),
                "moves": games.length.astype(jnp.float32).mean()}

    @property
    def max_moves(self) -> int:
        """pgx ends a game after 2 * N * N moves (scored as it stands)."""
        return 2 * int(self.config.data.board_size) ** 2

    @property
    def games_per_generation(self) -> int:
        return int(self.config.data.games_per_generation)

    def closed_requirements(self) -> list[str]:
        """The v0.7 reference (reinforcement/tensorflow/minigo, ml_perf/train_loop.py) is a
        different loop from this one: `--input_features=mlperf07` (13 planes, this net reads
        17), one pass over 0.3 of the last 5 generations' positions a generation (here 32
        steps), fast play, resignation and target pruning in self-play, a bootstrap checkpoint
        to start from, and its target model to play (`convert.py` cannot load it into 17
        planes). Until those are built, no run of it is a closed result."""
        return ["the v0.7 MiniGo reference's loop (reinforcement/tensorflow/minigo "
                "ml_perf/train_loop.py: 13 mlperf07 input planes, training on 0.3 of the last 5 "
                "generations' positions, fast play, resignation, the bootstrap checkpoint and "
                "the reference target model) is not what this workload runs yet (it trains 32 "
                "steps a generation on 17 AlphaGo Zero planes from a random network)."]

    def check_data(self) -> None:
        """The opponent exists (GNU Go on PATH, or a readable target model file)."""
        e = self.config.eval
        if e.opponent == "gnugo":
            gtp.find_gnugo()
        elif e.opponent == "model":
            if e.target_file and not os.path.isfile(e.target_file):
                raise UsageError(
                    f"minigo: eval.target_file={e.target_file!r} does not exist. Pass the .npz "
                    "target model written by `python -m workloads.minigo.convert` (or leave it "
                    "empty to play a frozen randomly initialised network, for tests only).")
            if e.target_file:  # names and shapes against this config's net, before compute
                match.load_target(e.target_file,
                                  jax.eval_shape(self.init_variables, jax.random.PRNGKey(0)))
        else:
            raise UsageError(f"minigo: eval.opponent={e.opponent!r}; use 'gnugo' or 'model'.")

    def make_evaluator(self, variables_like: Any) -> match.Evaluator:
        """Untimed: the evaluation opponent, its compiled move functions and target weights."""
        e = self.config.eval
        settings = self.settings(e.num_readouts, noise=False)
        if e.opponent == "gnugo":
            return match.GnuGoEvaluator(self.env, self.apply, settings, int(e.games),
                                        int(self.config.data.board_size),
                                        float(self.config.data.komi), int(e.gnugo_level),
                                        self.max_moves, variables_like)
        target = (match.load_target(e.target_file, variables_like) if e.target_file else
                  self.init_variables(jax.random.PRNGKey(int(e.target_seed))))
        return match.ModelEvaluator(self.env, self.apply, settings, int(e.games), target,
                                    self.max_moves, variables_like)

    def init_variables(self, rng: jax.Array) -> dict[str, Any]:
        params, model_state = self.init(rng)
        return nn.meta.unbox({"params": params, **model_state})

    def mllog_hyperparameters(self) -> dict[str, Any]:
        """closed_minigo.yaml (0.7.0): train_batch_size, lr_boundaries, lr_rates,
        min_selfplay_games_per_generation (== 8192) exactly once."""
        c = self.config
        return {"train_batch_size": int(c.data.global_batch_size),
                "lr_boundaries": [int(b) for b in c.schedule.lr_boundaries],
                "lr_rates": [float(r) for r in c.schedule.lr_rates],
                "min_selfplay_games_per_generation": int(c.data.min_games_per_generation)}

