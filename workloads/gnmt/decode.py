"""GNMT beam search on device, as the reference's `SequenceGenerator.beam_search`.

mlcommons/training v0.7 `rnn_translator/pytorch/seq2seq/inference/beam_search.py`, with static
shapes (one `lax.while_loop`; finished examples are frozen by masks instead of being removed):

- every example keeps `beam` hypotheses; at step 1 only beam 0 expands. A beam whose last word
  is EOS is finished: its only continuation is EOS with log-prob 0 (`eos_beam_fill`), so its
  score stays and it keeps competing in the top-`beam` of the `beam * vocab` candidates;
- `lengths` count the start token and every generated word up to and including EOS;
- attention weights are summed per beam SLOT (`accu_attn_scores[active] += attn`, zero for
  finished beams) and, as in the reference, not reordered when beams are reordered;
- when every beam of an example has ended, its scores become
  score / ((c + len) / (c + 1)) ** alpha + beta * sum(log(min(attn_sum, 1)))
  (length normalization with constant c = 5.0 and alpha 0.6, coverage penalty beta 0.1;
  log(0) terms, e.g. padded source positions, count 0) and the example stops;
- an example still running after `max_seq_len - 1` steps keeps its unnormalized scores;
- the translation is the beam with the highest score.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax
import jax
import jax.numpy as jnp
from jax import lax

NEG_INF = -jnp.inf


def length_norm(lengths: jax.Array, alpha: float, const: float) -> jax.Array:
    """((const + length) / (const + 1)) ** alpha (beam_search.py, `norm`)."""
    return jnp.power((const + lengths.astype(jnp.float32)) / (const + 1.0), alpha)


def coverage_penalty(attn_sum: jax.Array, beta: float) -> jax.Array:
    """beta * sum over source positions of log(min(attn_sum, 1)), log(0) counted as 0."""
    logs = jnp.log(jnp.clip(attn_sum, 0.0, 1.0))
    return beta * jnp.where(jnp.isneginf(logs), 0.0, logs).sum(axis=-1)


def tile(x: Any, beam: int) -> Any:
    """[batch, ...] -> [batch * beam, ...], each example repeated `beam` times."""
    return jax.tree.map(lambda a: jnp.repeat(a, beam, axis=0), x)


@flax.struct.dataclass
class State:
    """Loop carry ([batch, beam] unless said)."""

    idx: jax.Array  # scalar: the step (the position written next)
    words: jax.Array  # last word of each beam
    scores: jax.Array
    lengths: jax.Array
    seqs: jax.Array  # [batch, beam, max_seq_len]; position 0 is the start token
    attn_sum: jax.Array  # [batch, beam, src]
    active: jax.Array  # [batch] bool: the example is still decoding
    cache: Any  # decoder states, leaves [batch * beam, ...]


def beam_search(step_fn: Callable[[jax.Array, Any], tuple[jax.Array, jax.Array, Any]],
                cache: Any, batch: int, beam: int, src_len: int, max_seq_len: int,
                start_id: int, eos_id: int, alpha: float = 0.6, const: float = 5.0,
                beta: float = 0.1) -> tuple[jax.Array, jax.Array]:
    """Returns ([batch, max_seq_len - 1] tokens after the start token, [batch] final scores).

    `step_fn(words [batch*beam], cache) -> (logprobs [batch*beam, vocab], attention
    [batch*beam, src], cache)` runs one decoder step; `cache` leaves have a leading
    [batch * beam] dimension (use `tile` on per-example values).
    """
    init = State(
        idx=jnp.ones([], jnp.int32),
        words=jnp.full((batch, beam), start_id, jnp.int32),
        scores=jnp.zeros((batch, beam), jnp.float32),
        lengths=jnp.ones((batch, beam), jnp.int32),
        seqs=jnp.full((batch, beam, max_seq_len), start_id, jnp.int32),
        attn_sum=jnp.zeros((batch, beam, src_len), jnp.float32),
        active=jnp.ones((batch,), bool),
        cache=cache,
    )
    rows = jnp.arange(batch)[:, None]

    def cond(s: State) -> jax.Array:
        return (s.idx < max_seq_len) & jnp.any(s.active)

    def body(s: State) -> State:
        eos_mask = s.words == eos_id
        terminating = jnp.all(eos_mask, axis=1) & s.active
        live = s.active[:, None]
        lengths = s.lengths + (live & ~eos_mask).astype(jnp.int32)
        logprobs, attn, cache = step_fn(s.words.reshape(-1), s.cache)
        vocab = logprobs.shape[-1]
        logprobs = logprobs.astype(jnp.float32).reshape(batch, beam, vocab)
        attn = jnp.where(eos_mask[..., None], 0.0, attn.reshape(batch, beam, -1))
        attn_sum = s.attn_sum + jnp.where(live[..., None], attn, 0.0)
        eos_row = jnp.full((vocab,), NEG_INF).at[eos_id].set(0.0)
        logprobs = jnp.where(eos_mask[..., None], eos_row, logprobs)
        new = s.scores[..., None] + logprobs
        new = jnp.where((s.idx == 1) & (jnp.arange(beam) > 0)[None, :, None], NEG_INF, new)
        scores, index = lax.top_k(new.reshape(batch, -1), beam)
        source, words = index // vocab, index % vocab
        seqs = s.seqs[rows, source].at[:, :, s.idx].set(words)
        lengths = lengths[rows, source]
        cache = jax.tree.map(
            lambda a: a.reshape((batch, beam) + a.shape[1:])[rows, source].reshape(a.shape), cache)
        done = terminating[:, None]
        scores = jnp.where(done, scores / length_norm(lengths, alpha, const)
                           + coverage_penalty(attn_sum, beta), scores)
        keep = lambda new_value, old: jnp.where(  # noqa: E731
            s.active.reshape((batch,) + (1,) * (new_value.ndim - 1)), new_value, old)
        return State(
            idx=s.idx + 1, words=keep(words, s.words), scores=keep(scores, s.scores),
            lengths=keep(lengths, s.lengths), seqs=keep(seqs, s.seqs), attn_sum=attn_sum,
            active=s.active & ~terminating,
            cache=cache,
        )

    final = lax.while_loop(cond, body, init)
    best = jnp.argmax(final.scores, axis=1)
    return final.seqs[jnp.arange(batch), best, 1:], final.scores[jnp.arange(batch), best]

