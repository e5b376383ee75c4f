"""Beam search on device (one `lax.while_loop`), with the GNMT length penalty.

A hypothesis's score is log P(y) / ((5 + |y|) / 6) ** alpha. Each step expands every live beam by
every token, keeps the best 2*beam candidates (so that `beam` stay live even if `beam` of them
just ended), moves candidates that emitted EOS into the finished set, and stops early once no
live beam can beat the worst finished one. The decoder's key/value cache is any pytree whose
arrays have a leading [batch * beam] dimension (scalars, such as cache indices, are shared).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax
import jax
import jax.numpy as jnp
from jax import lax

NEG_INF = -1.0e7


def length_penalty(length: jax.Array | int, alpha: float) -> jax.Array:
    """((5 + length) / 6) ** alpha (Wu et al. 2016)."""
    return jnp.power((5.0 + jnp.asarray(length, jnp.float32)) / 6.0, alpha)


def _map_arrays(fn: Callable[[jax.Array], jax.Array], tree: Any) -> Any:
    return jax.tree.map(lambda x: x if jnp.ndim(x) == 0 else fn(x), tree)


def expand_beams(tree: Any, beam: int) -> Any:
    """[batch, ...] -> [batch * beam, ...], each example repeated `beam` times."""
    return _map_arrays(lambda x: jnp.repeat(x, beam, axis=0), tree)


def _unflat(tree: Any, batch: int) -> Any:
    return _map_arrays(lambda x: x.reshape((batch, -1) + x.shape[1:]), tree)


def _flat(tree: Any) -> Any:
    return _map_arrays(lambda x: x.reshape((-1,) + x.shape[2:]), tree)


def _gather(tree: Any, indices: jax.Array) -> Any:
    """Pick beams per example: arrays [batch, old_beam, ...], indices [batch, new_beam]."""
    rows = jnp.arange(indices.shape[0])[:, None]
    return _map_arrays(lambda x: x[rows, indices], tree)


@flax.struct.dataclass
class BeamState:
    """Loop carry: position, live and finished hypotheses, and the live beams' cache."""

    index: jax.Array  # scalar: position of the last written token
    live_logprobs: jax.Array  # [batch, beam]
    live_seqs: jax.Array  # [batch, beam, length]; position 0 is the start token
    finished_scores: jax.Array  # [batch, beam]
    finished_seqs: jax.Array  # [batch, beam, length]
    finished_flags: jax.Array  # [batch, beam] bool: slot holds a real finished hypothesis
    cache: Any  # [batch, beam, ...] arrays


def beam_search(
    tokens_to_logits: Callable[[jax.Array, Any], tuple[jax.Array, Any]],
    cache: Any,
    batch_size: int,
    beam_size: int,
    max_decode_len: int,
    eos_id: int,
    alpha: float,
) -> tuple[jax.Array, jax.Array]:
    """Returns ([batch, max_decode_len] best token ids after the start token, [batch] scores).

    `tokens_to_logits(ids [batch*beam, 1], cache) -> (logits [batch*beam, vocab], cache)` runs
    one decoder step; `cache` must already have the [batch * beam] leading dimension.
    """
    length = max_decode_len + 1  # + the start token
    init = BeamState(
        index=jnp.zeros([], jnp.int32),
        live_logprobs=jnp.tile(jnp.array([0.0] + [NEG_INF] * (beam_size - 1)), (batch_size, 1)),
        live_seqs=jnp.zeros((batch_size, beam_size, length), jnp.int32),
        finished_scores=jnp.full((batch_size, beam_size), NEG_INF),
        finished_seqs=jnp.zeros((batch_size, beam_size, length), jnp.int32),
        finished_flags=jnp.zeros((batch_size, beam_size), bool),
        cache=_unflat(cache, batch_size),
    )

    def cond(s: BeamState) -> jax.Array:
        # The best a live beam can still reach: its log-prob (which only falls) over the
        # largest penalty. Stop when it cannot beat any example's worst finished score.
        best_live = s.live_logprobs[:, 0] / length_penalty(max_decode_len, alpha)
        worst_finished = jnp.where(
            jnp.all(s.finished_flags, axis=1), jnp.min(s.finished_scores, axis=1), NEG_INF
        )
        done = jnp.all(worst_finished > best_live)
        return (s.index < max_decode_len) & ~done

    def body(s: BeamState) -> BeamState:
        ids = lax.dynamic_slice_in_dim(s.live_seqs, s.index, 1, axis=2)  # [batch, beam, 1]
        logits, cache = tokens_to_logits(ids.reshape(-1, 1), _flat(s.cache))
        cache = _unflat(cache, batch_size)
        vocab = logits.shape[-1]
        logprobs = jax.nn.log_softmax(logits.astype(jnp.float32))
        logprobs = logprobs.reshape(batch_size, beam_size, vocab)
        logprobs = logprobs + s.live_logprobs[:, :, None]
        top_logprobs, top_flat = lax.top_k(logprobs.reshape(batch_size, -1), 2 * beam_size)
        top_beams, top_ids = top_flat // vocab, top_flat % vocab
        seqs = _gather(s.live_seqs, top_beams)
        seqs = seqs.at[:, :, s.index + 1].set(top_ids)
        ended = top_ids == eos_id

        # Live set: the best `beam` candidates that did not just end.
        live_logprobs, keep = lax.top_k(jnp.where(ended, NEG_INF, top_logprobs), beam_size)
        live_seqs = _gather(seqs, keep)
        live_cache = _gather(cache, _gather(top_beams, keep))

        # Finished set: the best `beam` among the old finished and the ones that just ended.
        scores = jnp.where(ended, top_logprobs / length_penalty(s.index + 1, alpha), NEG_INF)
        all_scores = jnp.concatenate([s.finished_scores, scores], axis=1)
        all_seqs = jnp.concatenate([s.finished_seqs, seqs], axis=1)
        all_flags = jnp.concatenate([s.finished_flags, ended], axis=1)
        finished_scores, best = lax.top_k(all_scores, beam_size)
        return BeamState(
            index=s.index + 1,
            live_logprobs=live_logprobs,
            live_seqs=live_seqs,
            finished_scores=finished_scores,
            finished_seqs=_gather(all_seqs, best),
            finished_flags=_gather(all_flags, best),
            cache=live_cache,
        )

    final = lax.while_loop(cond, body, init)
    # An example with no finished hypothesis (hit max length) falls back to its best live one.
    any_finished = final.finished_flags[:, 0]
    seqs = jnp.where(any_finished[:, None], final.finished_seqs[:, 0], final.live_seqs[:, 0])
    scores = jnp.where(any_finished, final.finished_scores[:, 0], final.live_logprobs[:, 0])
    return seqs[:, 1:], scores
