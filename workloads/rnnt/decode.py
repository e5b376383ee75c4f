"""Greedy transducer decoding as the reference's `ScriptGreedyDecoder._greedy_decode`, jitted.

Reference: mlcommons/inference speech_recognition/rnnt/pytorch/decoders.py. For every encoder
frame t < out_len: up to `max_symbols_per_step` (30, the decoder's default) times, run the
joint network on (f_t, g), take the argmax k; blank ends the frame; any other symbol is
appended and the prediction network's state advances to it (its state does NOT advance on
blank). The first prediction is of SOS (zero embedding) from a zero state.

Static shapes for XLA: a `lax.scan` over the padded frames and, inside it, a `lax.while_loop`
that stops when every row of the batch has emitted blank (or is past its length) or the symbol
limit is hit. Rows are independent, so a batch decodes exactly as each utterance alone. The
output is [B, max_output_len] ids (-1 past each row's count); a row that would emit more than
`max_output_len` symbols keeps its first `max_output_len` (the reference's buffer holds
max_len * max_symbols_per_step; configs size `max_output_len` above any transcript they score).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from workloads.rnnt.model import RNNT, SOS

MAX_SYMBOLS_PER_STEP = 30  # decoders.py ScriptGreedyDecoder(max_symbols_per_step=30)


def greedy_decode(model: RNNT, params: Any, features: jax.Array, feature_lens: jax.Array,
                  max_symbols_per_step: int = MAX_SYMBOLS_PER_STEP, max_output_len: int = 64
                  ) -> tuple[jax.Array, jax.Array]:
    """features [B, T, F], lens [B] -> (ids [B, max_output_len] int32, -1 padded; counts [B])."""
    variables = {"params": params}
    enc, enc_lens = model.apply(variables, features, feature_lens, method=RNNT.encode)
    return greedy_decode_encoded(model, params, enc, enc_lens, max_symbols_per_step,
                                 max_output_len)


def greedy_decode_encoded(model: RNNT, params: Any, enc: jax.Array, enc_lens: jax.Array,
                          max_symbols_per_step: int, max_output_len: int
                          ) -> tuple[jax.Array, jax.Array]:
    """Greedy decoding of encoder outputs enc [B, T, He] with valid lengths enc_lens [B]."""
    variables = {"params": params}
    batch = enc.shape[0]
    blank = model.num_classes - 1

    def predict(symbols, state):
        return model.apply(variables, symbols, state, method=RNNT.predict)

    def joint(f, g):
        return model.apply(variables, f, g, method=RNNT.joint)

    # g and the state after it, for the last emitted symbol and the committed state
    zeros = jnp.zeros((batch, model.pred_hidden), jnp.float32)
    state = [(zeros, zeros) for _ in range(model.pred_layers)]
    g, state_prime = predict(jnp.full((batch,), SOS, jnp.int32), state)
    out = jnp.full((batch, max_output_len), -1, jnp.int32)
    count = jnp.zeros((batch,), jnp.int32)
    rows = jnp.arange(batch)

    def frame(carry, xs):
        f_t, t = xs

        def cond(inner):
            active, n = inner[0], inner[-1]
            return jnp.any(active) & (n < max_symbols_per_step)

        def body(inner):
            active, g, state, state_prime, out, count, n = inner
            k = jnp.argmax(joint(f_t, g), axis=-1).astype(jnp.int32)
            emit = active & (k != blank)
            slot = jnp.where(emit & (count < max_output_len), count, max_output_len)
            out = out.at[rows, slot].set(k, mode="drop")
            count = count + emit.astype(jnp.int32)
            state = jax.tree_util.tree_map(
                lambda new, old: jnp.where(emit[:, None], new, old), state_prime, state)
            g_new, state_prime_new = predict(jnp.where(emit, k, 0), state)
            g = jnp.where(emit[:, None], g_new, g)
            state_prime = jax.tree_util.tree_map(
                lambda new, old: jnp.where(emit[:, None], new, old), state_prime_new, state_prime)
            return emit, g, state, state_prime, out, count, n + 1

        g, state, state_prime, out, count = carry
        active = t < enc_lens
        _, g, state, state_prime, out, count, _ = jax.lax.while_loop(
            cond, body, (active, g, state, state_prime, out, count, jnp.int32(0)))
        return (g, state, state_prime, out, count), None

    xs = (jnp.swapaxes(enc, 0, 1), jnp.arange(enc.shape[1]))
    (_, _, _, out, count), _ = jax.lax.scan(frame, (g, state, state_prime, out, count), xs)
    return out, jnp.minimum(count, max_output_len)
