"""The RNN-T of the MLPerf Inference v0.7 reference, in flax.linen.

Reference: mlcommons/inference speech_recognition/rnnt/pytorch/model_separable_rnnt.py (`RNNT`,
`Encoder`, `Prediction`, `Joint`), pytorch/rnn.py (`LstmDrop`, `StackTime`) and the `[rnnt]`
section of pytorch/configs/rnnt.toml: encoder_n_hidden 1024, encoder_pre_rnn_layers 2,
encoder_stack_time_factor 2, encoder_post_rnn_layers 3, pred_n_hidden 320, pred_rnn_layers 2,
forget_gate_bias 1.0, joint_n_hidden 512, dropout 0.32; 29 classes (labels: space, a-z,
apostrophe, then blank = 28, the last id).

Parameters keep torch's layout and names (`weight_ih` [4H, in], `weight_hh` [4H, H], `bias_ih`,
`bias_hh`, gates in the order i, f, g, o; a Linear's `weight` [out, in] and `bias`), so that the
reference's checkpoint loads by renaming only (`workloads.rnnt.convert`) and the parameter count
is the reference's, both LSTM biases included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

SOS = -1  # model_separable_rnnt.py Prediction._SOS: "as if embedding gave 0.0"
LSTMState = tuple[jax.Array, jax.Array]  # (h, c), each [B, H]


def _uniform(scale: float):
    """torch.nn.LSTM / Linear default init: U(-1/sqrt(fan), 1/sqrt(fan))."""
    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -scale, scale)
    return init


class LSTMLayer(nn.Module):
    """One torch.nn.LSTM layer. The input projection of every frame is one matmul; only the
    recurrent matmul runs in the `lax.scan` (compiled once, whatever the length)."""

    hidden: int
    forget_gate_bias: float = 1.0
    dtype: Any = jnp.float32

    def setup_params(self, in_features: int):
        h = self.hidden
        k = 1.0 / h ** 0.5
        part = nn.with_logical_partitioning
        w_ih = self.param("weight_ih", part(_uniform(k), ("rnn_gates", "rnn_in")),
                          (4 * h, in_features))
        w_hh = self.param("weight_hh", part(_uniform(k), ("rnn_gates", "rnn_hidden")), (4 * h, h))

        def bias_ih_init(key, shape, dtype=jnp.float32):
            # rnn.py LstmDrop: bias_ih's forget chunk [H:2H] = forget_gate_bias, bias_hh's = 0
            b = _uniform(k)(key, shape, dtype)
            return b.at[h:2 * h].set(self.forget_gate_bias)

        def bias_hh_init(key, shape, dtype=jnp.float32):
            return _uniform(k)(key, shape, dtype).at[h:2 * h].set(0.0)

        b_ih = self.param("bias_ih", part(bias_ih_init, ("rnn_gates",)), (4 * h,))
        b_hh = self.param("bias_hh", part(bias_hh_init, ("rnn_gates",)), (4 * h,))
        return w_ih, w_hh, b_ih, b_hh

    @nn.compact
    def __call__(self, x: jax.Array, state: LSTMState | None = None
                 ) -> tuple[jax.Array, LSTMState]:
        """x [B, T, in] -> (outputs [B, T, H], final (h, c))."""
        w_ih, w_hh, b_ih, b_hh = self.setup_params(x.shape[-1])
        batch = x.shape[0]
        if state is None:
            zeros = jnp.zeros((batch, self.hidden), jnp.float32)
            state = (zeros, zeros)
        gates_x = jnp.einsum("bti,gi->tbg", x.astype(self.dtype), w_ih.astype(self.dtype))
        gates_x = gates_x.astype(jnp.float32) + b_ih + b_hh
        w_hh_t = w_hh.astype(self.dtype).T

        def step(carry, gx):
            h, c = carry
            gates = gx + jnp.dot(h.astype(self.dtype), w_hh_t).astype(jnp.float32)
            return lstm_cell(gates, c)

        state, outputs = jax.lax.scan(step, state, gates_x)
        return jnp.swapaxes(outputs, 0, 1), state


def lstm_cell(gates: jax.Array, c: jax.Array) -> tuple[LSTMState, jax.Array]:
    """torch's LSTM cell from the summed pre-activations [B, 4H] (order i, f, g, o)."""
    i, f, g, o = jnp.split(gates, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (h, c), h


class StackedLSTM(nn.Module):
    """torch.nn.LSTM(num_layers=N, dropout=p) followed by LstmDrop's dropout of the output:
    dropout after every layer (rnn.py)."""

    hidden: int
    layers: int
    dropout: float = 0.0
    forget_gate_bias: float = 1.0
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array, state: Sequence[LSTMState] | None = None,
                 train: bool = False) -> tuple[jax.Array, list[LSTMState]]:
        """x [B, T, in] -> (outputs [B, T, H], per-layer final states)."""
        finals = []
        for i in range(self.layers):
            x, s = LSTMLayer(self.hidden, self.forget_gate_bias, self.dtype, name=f"layer_{i}")(
                x, None if state is None else state[i])
            finals.append(s)
            x = nn.Dropout(self.dropout, deterministic=not train or self.dropout == 0)(x)
        return x, finals


def stack_time(x: jax.Array, lens: jax.Array, factor: int) -> tuple[jax.Array, jax.Array]:
    """rnn.py StackTime: pad T to a multiple of `factor`, concatenate each `factor` consecutive
    frames ([B, T, H] -> [B, ceil(T/f), f*H]); lens -> (lens + 2f - 1) // f - 1 = ceil(lens/f)."""
    b, t, h = x.shape
    pad = (-t) % factor
    x = jnp.pad(x, ((0, 0), (0, pad), (0, 0)))
    x = x.reshape(b, (t + pad) // factor, factor * h)
    return x, (lens + factor * 2 - 1) // factor - 1


class Linear(nn.Module):
    """torch.nn.Linear: `weight` [out, in], `bias` [out], torch's default init."""

    features: int
    names: tuple[str, str] = ("joint_out", "joint_in")
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        k = 1.0 / x.shape[-1] ** 0.5
        w = self.param("weight", nn.with_logical_partitioning(_uniform(k), self.names),
                       (self.features, x.shape[-1]))
        b = self.param("bias", nn.with_logical_partitioning(_uniform(k), self.names[:1]),
                       (self.features,))
        y = jnp.einsum("...i,oi->...o", x.astype(self.dtype), w.astype(self.dtype))
        return y.astype(jnp.float32) + b


class Encoder(nn.Module):
    """pre_rnn (2 x 1024) -> StackTime(2) -> post_rnn (3 x 1024)."""

    hidden: int = 1024
    pre_layers: int = 2
    post_layers: int = 3
    stack_time_factor: int = 2
    dropout: float = 0.32
    forget_gate_bias: float = 1.0
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array, lens: jax.Array, train: bool = False
                 ) -> tuple[jax.Array, jax.Array]:
        """features [B, T, 240], lens [B] -> (encodings [B, ceil(T/2), H], ceil(lens/2))."""
        kw = dict(dropout=self.dropout, forget_gate_bias=self.forget_gate_bias, dtype=self.dtype)
        x, _ = StackedLSTM(self.hidden, self.pre_layers, name="pre_rnn", **kw)(x, train=train)
        x, lens = stack_time(x, lens, self.stack_time_factor)
        x, _ = StackedLSTM(self.hidden, self.post_layers, name="post_rnn", **kw)(x, train=train)
        return x, lens


class Prediction(nn.Module):
    """Embedding of the 28 non-blank symbols (SOS = zeros) -> 2 LSTM layers of 320."""

    num_classes: int = 29
    hidden: int = 320
    layers: int = 2
    dropout: float = 0.32
    forget_gate_bias: float = 1.0
    dtype: Any = jnp.float32

    def setup(self):
        # model_separable_rnnt.py: torch.nn.Embedding(vocab_size - 1, n_hidden), N(0, 1) init
        self.embed = self.param(
            "embed", nn.with_logical_partitioning(nn.initializers.normal(1.0),
                                                  ("symbols", "pred_hidden")),
            (self.num_classes - 1, self.hidden))
        self.dec_rnn = StackedLSTM(self.hidden, self.layers, self.dropout, self.forget_gate_bias,
                                   self.dtype)

    def __call__(self, y: jax.Array, state: Sequence[LSTMState] | None = None,
                 train: bool = False) -> tuple[jax.Array, list[LSTMState]]:
        """y [B, U] symbol ids (SOS = -1) -> (g [B, U, H], per-layer states)."""
        is_sos = y == SOS
        emb = jnp.take(self.embed, jnp.where(is_sos, 0, y), axis=0)
        emb = jnp.where(is_sos[..., None], 0.0, emb)
        return self.dec_rnn(emb, state, train=train)


class SplitLinear(nn.Module):
    """torch.nn.Linear on cat([a, b], -1) for broadcastable a [..., Ia] and b [..., Ib]: one
    `weight` [out, Ia + Ib] as the reference stores it, applied to a and b apart and added
    (the same sum, without materializing the [B, T, U, Ia + Ib] concatenation)."""

    features: int
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, a: jax.Array, b: jax.Array) -> jax.Array:
        ia, ib = a.shape[-1], b.shape[-1]
        k = 1.0 / (ia + ib) ** 0.5
        w = self.param("weight", nn.with_logical_partitioning(_uniform(k),
                                                               ("joint_hidden", "joint_in")),
                       (self.features, ia + ib))
        bias = self.param("bias", nn.with_logical_partitioning(_uniform(k), ("joint_hidden",)),
                          (self.features,))
        w = w.astype(self.dtype)
        ya = jnp.einsum("...i,oi->...o", a.astype(self.dtype), w[:, :ia]).astype(jnp.float32)
        yb = jnp.einsum("...i,oi->...o", b.astype(self.dtype), w[:, ia:]).astype(jnp.float32)
        return ya + yb + bias


class Joint(nn.Module):
    """Linear(enc + pred -> 512), ReLU, dropout, Linear(512 -> 29) on every (t, u) pair
    (model_separable_rnnt.py `Joint`: torch.cat([f, g], dim=3), f first)."""

    num_classes: int = 29
    hidden: int = 512
    dropout: float = 0.32
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, f: jax.Array, g: jax.Array, train: bool = False) -> jax.Array:
        """f [..., He] and g [..., Hp], broadcastable (training: f [B, T, 1, He], g
        [B, 1, U, Hp]) -> logits [..., classes]."""
        h = jax.nn.relu(SplitLinear(self.hidden, self.dtype, name="fc1")(f, g))
        h = nn.Dropout(self.dropout, deterministic=not train or self.dropout == 0)(h)
        return Linear(self.num_classes, ("symbols", "joint_hidden"), self.dtype, name="fc2")(h)


class RNNT(nn.Module):
    """The three networks; `__call__` is the training forward (logits over the whole lattice),
    `encode` / `predict` / `joint` are the pieces greedy decoding calls."""

    num_classes: int = 29
    encoder_hidden: int = 1024
    encoder_pre_layers: int = 2
    encoder_post_layers: int = 3
    stack_time_factor: int = 2
    pred_hidden: int = 320
    pred_layers: int = 2
    joint_hidden: int = 512
    dropout: float = 0.32
    forget_gate_bias: float = 1.0
    dtype: Any = jnp.float32

    def setup(self):
        self.encoder = Encoder(self.encoder_hidden, self.encoder_pre_layers,
                               self.encoder_post_layers, self.stack_time_factor, self.dropout,
                               self.forget_gate_bias, self.dtype)
        self.prediction = Prediction(self.num_classes, self.pred_hidden, self.pred_layers,
                                     self.dropout, self.forget_gate_bias, self.dtype)
        self.joint_net = Joint(self.num_classes, self.joint_hidden, self.dropout, self.dtype)

    @property
    def blank(self) -> int:
        """The blank id: the last class (decoders.py: "_blank_id is the last id of dict")."""
        return self.num_classes - 1

    def __call__(self, features: jax.Array, feature_lens: jax.Array, labels: jax.Array,
                 train: bool = False) -> tuple[jax.Array, jax.Array]:
        """features [B, T, F], lens [B], labels [B, U] -> (logits [B, T', U + 1, classes],
        encoder lens [B]); the prediction network sees [SOS, y_1 .. y_U]."""
        f, lens = self.encode(features, feature_lens, train)
        sos = jnp.full((labels.shape[0], 1), SOS, labels.dtype)
        g, _ = self.prediction(jnp.concatenate([sos, labels], axis=1), train=train)
        return self.joint_net(f[:, :, None, :], g[:, None, :, :], train), lens

    def encode(self, features: jax.Array, feature_lens: jax.Array, train: bool = False
               ) -> tuple[jax.Array, jax.Array]:
        """Encoder output [B, T', He] and its lengths."""
        return self.encoder(features, feature_lens, train)

    def predict(self, symbols: jax.Array, state: Sequence[LSTMState] | None
                ) -> tuple[jax.Array, list[LSTMState]]:
        """One prediction step: symbols [B] (SOS = -1) -> (g [B, Hp], new states)."""
        g, state = self.prediction(symbols[:, None], state)
        return g[:, 0], state

    def joint(self, f: jax.Array, g: jax.Array) -> jax.Array:
        """Logits [B, classes] of one (t, u) pair per row (eval: no dropout)."""
        return self.joint_net(f, g)
