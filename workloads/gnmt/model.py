"""GNMT-v2 (MLPerf Training v0.7 `gnmt`) in flax.linen.

As the reference, mlcommons/training v0.7 `rnn_translator/pytorch/seq2seq/models/`:

- `gnmt.py`: one embedding table (uniform +-0.1) shared by encoder and decoder
  (`share_embedding=True`), hidden size 1024, 4 layers each side, dropout 0.2.
- `encoder.py` (`ResidualRecurrentEncoder`): layer 1 is a bidirectional LSTM over the
  unpadded sources (`pack_padded_sequence`: the backward direction starts at each source's last
  token; padded outputs are zero); layer 2 an LSTM of 2x1024 -> 1024; layers 3-4 LSTMs with a
  residual connection; dropout on the input of every layer.
- `decoder.py` (`ResidualRecurrentDecoder`, `RecurrentAttention`): layer 1 is an LSTM whose
  output is the attention query; the attention context is concatenated to the input of layers
  2-4 (each 2x1024 -> 1024), layers 3-4 residual; a `Classifier` Linear(1024, vocab) with
  bias. Dropout on the embedded decoder input (`RecurrentAttention.forward`: `inputs =
  self.dropout(inputs)` before its LSTM) and on each of layers 2-4's input after the context
  is concatenated (`ResidualRecurrentDecoder.forward`: `torch.cat((x, attn))` then
  `self.dropout(x)`). The decoder starts from zero states.
- `attention.py` (`BahdanauAttention(normalize=True)`): score = g * v/|v| . tanh(W_q q + W_k k
  + b); W_q, W_k without bias; W_q, W_k, v ~ U(+-0.1) (its own `init_weight=0.1`, which
  `RecurrentAttention` does not pass), g = 1/sqrt(n), b = 0; padded source positions are
  filled with -65504 before the softmax.
- LSTM cells as PyTorch's `nn.LSTM` (gates i, f, g, o; two bias vectors b_ih and b_hh, which is
  why the parameter count matches the reference's): weights and b_ih U(+-0.1), b_hh zeros
  (`seq2seq/utils.py` `init_lstm_`, init_weight=0.1).

Each LSTM layer projects its whole input sequence once and runs the recurrence as one
`lax.scan` (its body traced and compiled once, whatever the length). The same layers run
one step at a time (sequence length 1, carried states) in beam search.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

# The minis' vocabularies' pad id (tpubench.text.ids, as the Transformer's) is also the decoder's
# start token there (no BOS row); the reference's BPE vocabulary has its own (moses_bpe.BOS_ID).
from tpubench.text.ids import PAD_ID

MASK_FILL = -65504.0  # attention.py: masked_fill_(mask, -65504.0)
INIT_WEIGHT = 0.1  # encoder.py / decoder.py init_weight

Carry = tuple[jax.Array, jax.Array]  # (h, c), each [batch, hidden]


@dataclasses.dataclass(frozen=True)
class GNMTConfig:
    """Model hyperparameters (full size: the reference's train.py defaults)."""

    vocab_size: int = 32320
    hidden_size: int = 1024
    num_layers: int = 4
    dropout_rate: float = 0.2
    dtype: Any = jnp.float32
    deterministic: bool = True
    init_weight: float = INIT_WEIGHT
    attention_scale: float = 0.0  # initial g of the attention; 0 = the reference's 1/sqrt(n)


def _uniform(scale: float):
    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -scale, scale)

    return init


def _param(module: nn.Module, name: str, init, shape, names):
    return module.param(name, nn.with_logical_partitioning(init, names), shape)


class LSTM(nn.Module):
    """One unidirectional LSTM layer over [batch, time, features] (PyTorch `nn.LSTM` maths)."""

    hidden: int
    dtype: Any = jnp.float32
    init_weight: float = INIT_WEIGHT

    @nn.compact
    def __call__(self, x: jax.Array, carry: Carry | None = None) -> tuple[jax.Array, Carry]:
        h = self.hidden
        init = _uniform(self.init_weight)
        w_ih = _param(self, "w_ih", init, (x.shape[-1], 4 * h), ("embed", "mlp"))
        w_hh = _param(self, "w_hh", init, (h, 4 * h), ("embed", "mlp"))
        b_ih = _param(self, "b_ih", init, (4 * h,), ("mlp",))
        b_hh = _param(self, "b_hh", nn.initializers.zeros, (4 * h,), ("mlp",))  # init_lstm_
        if carry is None:
            zeros = jnp.zeros((x.shape[0], h), jnp.float32)
            carry = (zeros, zeros)
        # The input projection of every step at once; only h @ w_hh is sequential.
        xw = jnp.einsum("btf,fg->tbg", x.astype(self.dtype), w_ih.astype(self.dtype))
        xw = xw.astype(jnp.float32) + b_ih + b_hh
        w_hh = w_hh.astype(self.dtype)

        def step(carry: Carry, xw_t: jax.Array) -> tuple[Carry, jax.Array]:
            h_prev, c_prev = carry
            gates = xw_t + jnp.dot(h_prev.astype(self.dtype), w_hh).astype(jnp.float32)
            i, f, g, o = jnp.split(gates, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c_prev + jax.nn.sigmoid(i) * jnp.tanh(g)
            h_new = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h_new, c), h_new

        carry, ys = jax.lax.scan(step, carry, xw)
        return jnp.swapaxes(ys, 0, 1), carry


def reverse_within(x: jax.Array, lengths: jax.Array) -> jax.Array:
    """Reverse each row's first `length` steps ([batch, time, ...]); padding stays in place."""
    t = jnp.arange(x.shape[1])[None, :]
    index = jnp.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
    return jnp.take_along_axis(x, index.reshape(index.shape + (1,) * (x.ndim - 2)), axis=1)


class BahdanauAttention(nn.Module):
    """Normalized Bahdanau attention (reference attention.py, normalize=True)."""

    units: int
    dtype: Any = jnp.float32
    scale_init: float = 0.0  # 0: the reference's 1/sqrt(units)
    init_weight: float = INIT_WEIGHT  # attention.py: BahdanauAttention(init_weight=0.1)

    def setup(self):
        n = self.units
        stdv = 1.0 / math.sqrt(n)
        init = _uniform(self.init_weight)  # attention.py: uniform_(-init_weight, init_weight)
        self.w_q = self.param("w_q", nn.with_logical_partitioning(init, ("embed", "mlp")), (n, n))
        self.w_k = self.param("w_k", nn.with_logical_partitioning(init, ("embed", "mlp")), (n, n))
        self.v = self.param("v", nn.with_logical_partitioning(init, ("mlp",)), (n,))
        self.g = self.param("g", nn.with_logical_partitioning(
            nn.initializers.constant(self.scale_init or stdv), ()), ())
        self.b = self.param("b", nn.with_logical_partitioning(nn.initializers.zeros, ("mlp",)),
                            (n,))

    def keys(self, encoded: jax.Array) -> jax.Array:
        """W_k k for every source position: [batch, src, units] (computed once per source)."""
        return jnp.einsum("bsf,fn->bsn", encoded.astype(self.dtype), self.w_k.astype(self.dtype))

    def __call__(self, query: jax.Array, encoded: jax.Array, keys: jax.Array,
                 src_mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(context [batch, tgt, units], weights [batch, tgt, src]) for queries [b, tgt, n]."""
        q = jnp.einsum("btf,fn->btn", query.astype(self.dtype), self.w_q.astype(self.dtype))
        v = self.g * self.v / jnp.linalg.norm(self.v)
        hidden = jnp.tanh((q[:, :, None, :] + keys[:, None, :, :]).astype(jnp.float32) + self.b)
        scores = jnp.einsum("btsn,n->bts", hidden, v)
        scores = jnp.where(src_mask[:, None, :], scores, MASK_FILL)
        weights = jax.nn.softmax(scores, axis=-1)
        context = jnp.einsum("bts,bsn->btn", weights.astype(self.dtype),
                             encoded.astype(self.dtype)).astype(jnp.float32)
        return context, weights


class GNMT(nn.Module):
    """Encoder, decoder with attention, classifier; `__call__` is the teacher-forced pass."""

    config: GNMTConfig

    def setup(self):
        c = self.config
        h, dt, iw = c.hidden_size, c.dtype, c.init_weight
        self.embedding = self.param(
            "embedding", nn.with_logical_partitioning(_uniform(iw), ("vocab", "embed")),
            (c.vocab_size, h))
        self.enc_fw = LSTM(h, dt, iw)
        self.enc_bw = LSTM(h, dt, iw)
        self.enc = [LSTM(h, dt, iw) for _ in range(1, c.num_layers)]
        self.dec = [LSTM(h, dt, iw) for _ in range(c.num_layers)]
        self.attention = BahdanauAttention(h, dt, c.attention_scale)
        self.w_out = self.param(
            "w_out", nn.with_logical_partitioning(_uniform(iw), ("embed", "vocab")),
            (h, c.vocab_size))
        self.b_out = self.param(
            "b_out", nn.with_logical_partitioning(_uniform(iw), ("vocab",)),
            (c.vocab_size,))
        self.dropout = nn.Dropout(c.dropout_rate)

    def _drop(self, x: jax.Array) -> jax.Array:
        return self.dropout(x, deterministic=self.config.deterministic)

    def encode(self, src: jax.Array) -> jax.Array:
        """Source ids [batch, src] (PAD after each sentence) -> [batch, src, hidden]."""
        mask = src != PAD_ID
        lengths = mask.sum(axis=1)
        x = self._drop(self.embedding[src])
        fw, _ = self.enc_fw(x)
        bw, _ = self.enc_bw(reverse_within(x, lengths))
        x = jnp.concatenate([fw, reverse_within(bw, lengths)], axis=-1) * mask[..., None]
        x, _ = self.enc[0](self._drop(x))
        for layer in self.enc[1:]:
            x = layer(self._drop(x))[0] + x
        return x

    def attention_keys(self, encoded: jax.Array) -> jax.Array:
        """The projected attention keys of an encoded source (reused by every decode step)."""
        return self.attention.keys(encoded)

    def decode(self, tgt_in: jax.Array, encoded: jax.Array, keys: jax.Array,
               src_mask: jax.Array, carry: list[Carry] | None = None
               ) -> tuple[jax.Array, jax.Array, list[Carry]]:
        """(logits [b, t, vocab], attention weights [b, t, src], new per-layer states) for
        decoder inputs [b, t] (the start token then the target shifted right)."""
        carry = carry if carry is not None else [None] * len(self.dec)
        new_carry = []
        x = self._drop(self.embedding[tgt_in])
        x, c = self.dec[0](x, carry[0])
        new_carry.append(c)
        context, weights = self.attention(x, encoded, keys, src_mask)
        x, c = self.dec[1](self._drop(jnp.concatenate([x, context], axis=-1)), carry[1])
        new_carry.append(c)
        for layer, layer_carry in zip(self.dec[2:], carry[2:], strict=True):
            y, c = layer(self._drop(jnp.concatenate([x, context], axis=-1)), layer_carry)
            new_carry.append(c)
            x = y + x
        logits = jnp.einsum("bth,hv->btv", x.astype(self.config.dtype),
                            self.w_out.astype(self.config.dtype)).astype(jnp.float32)
        return logits + self.b_out, weights, new_carry

    def __call__(self, src: jax.Array, tgt_in: jax.Array) -> jax.Array:
        """Teacher-forced logits [batch, tgt, vocab]."""
        encoded = self.encode(src)
        logits, _, _ = self.decode(tgt_in, encoded, self.attention_keys(encoded), src != PAD_ID)
        return logits


def shift_right(targets: jax.Array, start_id: int = PAD_ID) -> jax.Array:
    """Decoder inputs: the start token (PAD_ID; BOS with the reference's BPE vocabulary) then
    the targets without their last column."""
    return jnp.pad(targets, ((0, 0), (1, 0)), constant_values=start_id)[:, :-1]


def reference_param_count(vocab_size: int, hidden: int = 1024, layers: int = 4) -> int:
    """The reference model's parameter count, from its layer shapes (PyTorch nn.LSTM has
    4h*(in + h) weights and two 4h biases; the attention adds W_q, W_k, v, g, b)."""

    def lstm(n_in: int) -> int:
        return 4 * hidden * (n_in + hidden) + 8 * hidden

    encoder = 2 * lstm(hidden) + lstm(2 * hidden) + (layers - 2) * lstm(hidden)
    attention = 2 * hidden * hidden + 2 * hidden + 1
    decoder = lstm(hidden) + attention + (layers - 1) * lstm(2 * hidden)
    return vocab_size * hidden + encoder + decoder + hidden * vocab_size + vocab_size
