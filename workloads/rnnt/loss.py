"""The RNN-T loss (Graves 2012, "Sequence Transduction with Recurrent Neural Networks") in JAX.

optax 0.2.8 has `ctc_loss` but no transducer loss, hence this module. The forward variable over
the (t, u) lattice:

    alpha[0, 0] = 0
    alpha[t, u] = logaddexp(alpha[t-1, u] + blank[t-1, u],  alpha[t, u-1] + emit[t, u-1])
    loss        = -(alpha[T-1, U] + blank[T-1, U])

where blank[t, u] = log p(blank | t, u) and emit[t, u] = log p(y_{u+1} | t, u). One `lax.scan`
over t carries the row alpha[t, :]; inside a row, the recurrence along u is solved in closed
form with a cumulative log-sum-exp: with c[u] = sum_{j<u} emit[t, j],

    alpha[t, u] = c[u] + logcumsumexp_k<=u (a[k] - c[k]),   a[k] = alpha[t-1, k] + blank[t-1, k]

so the scan has T steps whatever U is, and its gradient is JAX's autodiff of that scan.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

NEG_INF = -1e30


def rnnt_loss(logits: jax.Array, labels: jax.Array, logit_lens: jax.Array,
              label_lens: jax.Array, blank: int) -> jax.Array:
    """Per-example negative log-likelihood [B] of `labels` under the transducer `logits`.

    logits [B, T, U + 1, V] (unnormalized; log-softmax is taken here), labels [B, U] int (ids
    past label_lens are ignored), logit_lens [B] valid frames (1 <= T_b <= T), label_lens [B]
    valid labels (0 <= U_b <= U).
    """
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    batch, frames, u1, _ = logp.shape
    blank_lp = logp[..., blank]  # [B, T, U+1]
    emit_lp = jnp.take_along_axis(logp[:, :, :-1, :], labels[:, None, :, None], axis=-1)[..., 0]
    # c[t, u] = sum_{j<u} emit[t, j]: [B, T, U+1]
    cum = jnp.concatenate([jnp.zeros((batch, frames, 1)), jnp.cumsum(emit_lp, axis=-1)], -1)

    def row(a, c):
        """a [B, U+1]: what flows down from the row above; c: this row's cumulative emits."""
        return c + jax.lax.cumlogsumexp(a - c, axis=a.ndim - 1)

    first = jnp.full((batch, u1), NEG_INF).at[:, 0].set(0.0)
    alpha0 = row(first, cum[:, 0])

    def step(alpha_prev, xs):
        blank_prev, c = xs
        alpha = row(alpha_prev + blank_prev, c)
        return alpha, alpha

    _, rest = jax.lax.scan(step, alpha0, (jnp.swapaxes(blank_lp[:, :-1], 0, 1),
                                          jnp.swapaxes(cum[:, 1:], 0, 1)))
    alphas = jnp.concatenate([alpha0[None], rest], axis=0)  # [T, B, U+1]
    b = jnp.arange(batch)
    t_last = logit_lens - 1
    final = alphas[t_last, b, label_lens] + blank_lp[b, t_last, label_lens]
    return -final
