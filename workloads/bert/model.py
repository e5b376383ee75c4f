"""BERT for pre-training (masked LM + next-sentence prediction) as pure linen modules.

The architecture of Google's `modeling.py` (and so of the MLPerf reference): learned position and
token-type embeddings, post-LayerNorm encoder layers with tanh-approximated GELU, LayerNorm epsilon
1e-12, truncated-normal(0.02) init, a pooler on `[CLS]`, and a masked-LM head whose decoder is the
word-embedding matrix (tied) plus its own output bias. The masked-LM head only runs on the
`masked_lm_positions` (76 of 512 tokens in the MLPerf data), as in the reference.

Every param carries logical axis names: `vocab`, `embed`, `heads`, `kv` (per-head features),
`mlp`; activations are constrained to (`batch`, `length`, `embed`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

Dtype = Any


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Sizes and regularisation of one BERT (the fields of a TF `bert_config.json`)."""

    vocab_size: int = 30522
    hidden_size: int = 1024
    num_hidden_layers: int = 24
    num_attention_heads: int = 16
    intermediate_size: int = 4096
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    dtype: Dtype = jnp.float32  # compute dtype; params stay float32

    @property
    def head_dim(self) -> int:
        """Features per attention head."""
        return self.hidden_size // self.num_attention_heads


def _kernel_init(config: BertConfig, axes: tuple[str | None, ...]) -> nn.initializers.Initializer:
    return nn.with_logical_partitioning(
        nn.initializers.truncated_normal(config.initializer_range), axes
    )


def _zeros(axes: tuple[str | None, ...]) -> nn.initializers.Initializer:
    return nn.with_logical_partitioning(nn.initializers.zeros_init(), axes)


def _layer_norm(config: BertConfig, name: str) -> nn.LayerNorm:
    return nn.LayerNorm(
        epsilon=config.layer_norm_eps,
        dtype=config.dtype,
        scale_init=nn.with_logical_partitioning(nn.initializers.ones_init(), ("embed",)),
        bias_init=_zeros(("embed",)),
        name=name,
    )


def _gelu(x: jax.Array) -> jax.Array:
    # Google's BERT uses the tanh approximation.
    return nn.gelu(x, approximate=True)


class Embeddings(nn.Module):
    """Word + position + token-type embeddings, LayerNorm, dropout; also the tied decoder."""

    config: BertConfig

    def setup(self) -> None:
        c = self.config
        self.word_embeddings = nn.Embed(
            c.vocab_size, c.hidden_size, dtype=c.dtype,
            embedding_init=_kernel_init(c, ("vocab", "embed")),
        )
        self.position_embeddings = nn.Embed(
            c.max_position_embeddings, c.hidden_size, dtype=c.dtype,
            embedding_init=_kernel_init(c, (None, "embed")),
        )
        self.token_type_embeddings = nn.Embed(
            c.type_vocab_size, c.hidden_size, dtype=c.dtype,
            embedding_init=_kernel_init(c, (None, "embed")),
        )
        self.layer_norm = _layer_norm(c, "layer_norm")
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def __call__(
        self, input_ids: jax.Array, segment_ids: jax.Array, deterministic: bool,
        position_ids: jax.Array | None = None,
    ) -> jax.Array:
        positions = jnp.arange(input_ids.shape[1])[None, :] if position_ids is None \
            else position_ids
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)
            + self.token_type_embeddings(segment_ids)
        )
        x = self.dropout(self.layer_norm(x), deterministic=deterministic)
        return nn.with_logical_constraint(x, ("batch", "length", "embed"))

    def attend(self, x: jax.Array) -> jax.Array:
        """Logits over the vocabulary with the word-embedding matrix as decoder."""
        return self.word_embeddings.attend(x)


class HeadProjection(nn.Module):
    """A dense layer between [.., embed] and [.., heads, kv] (either direction), with its 3-D
    kernel stored as such so each dimension carries its own logical name."""

    config: BertConfig
    to_heads: bool  # True: embed -> (heads, kv); False: (heads, kv) -> embed

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        c = self.config
        heads, kv, embed = c.num_attention_heads, c.head_dim, c.hidden_size
        if self.to_heads:
            shape, axes, eq = (embed, heads, kv), ("embed", "heads", "kv"), "...e,ehk->...hk"
            bias_shape, bias_axes = (heads, kv), ("heads", "kv")
        else:
            shape, axes, eq = (heads, kv, embed), ("heads", "kv", "embed"), "...hk,hke->...e"
            bias_shape, bias_axes = (embed,), ("embed",)
        kernel = self.param("kernel", _kernel_init(c, axes), shape)
        bias = self.param("bias", _zeros(bias_axes), bias_shape)
        y = jnp.einsum(eq, x.astype(c.dtype), kernel.astype(c.dtype))
        return y + bias.astype(c.dtype)


class SelfAttention(nn.Module):
    """Multi-head self-attention with [embed, heads, kv] projections."""

    config: BertConfig

    @nn.compact
    def __call__(self, x: jax.Array, bias: jax.Array, deterministic: bool) -> jax.Array:
        c = self.config
        q = HeadProjection(c, to_heads=True, name="query")(x)
        k = HeadProjection(c, to_heads=True, name="key")(x)
        v = HeadProjection(c, to_heads=True, name="value")(x)
        dropout_rng = None
        if not deterministic and c.attention_probs_dropout_prob > 0:
            dropout_rng = self.make_rng("dropout")
        out = nn.dot_product_attention(
            q, k, v, bias=bias, dropout_rng=dropout_rng,
            dropout_rate=c.attention_probs_dropout_prob, deterministic=deterministic,
            dtype=c.dtype, module=self,  # sows `attention_weights` (layer_transfer.py)
        )
        return HeadProjection(c, to_heads=False, name="out")(out)


class EncoderLayer(nn.Module):
    """Post-LN transformer layer: x = LN(x + attn(x)); x = LN(x + ffn(x))."""

    config: BertConfig

    @nn.compact
    def __call__(self, x: jax.Array, bias: jax.Array, deterministic: bool) -> jax.Array:
        c = self.config
        drop = nn.Dropout(c.hidden_dropout_prob)
        attn = SelfAttention(c, name="attention")(x, bias, deterministic)
        x = _layer_norm(c, "attention_layer_norm")(x + drop(attn, deterministic=deterministic))
        h = nn.Dense(
            c.intermediate_size, dtype=c.dtype, name="intermediate",
            kernel_init=_kernel_init(c, ("embed", "mlp")), bias_init=_zeros(("mlp",)),
        )(x)
        h = nn.with_logical_constraint(_gelu(h), ("batch", "length", "mlp"))
        h = nn.Dense(
            c.hidden_size, dtype=c.dtype, name="output",
            kernel_init=_kernel_init(c, ("mlp", "embed")), bias_init=_zeros(("embed",)),
        )(h)
        x = _layer_norm(c, "output_layer_norm")(x + drop(h, deterministic=deterministic))
        self.sow("intermediates", "hidden", x)  # the layer's output (layer_transfer.py)
        return nn.with_logical_constraint(x, ("batch", "length", "embed"))


def attention_bias(input_mask: jax.Array, packed: bool, dtype: Dtype) -> jax.Array:
    """Scores added before the softmax, [batch, 1, queries, keys]: -10000 on padding keys, as in
    the reference; for packed rows (`packing.py`: `input_mask` numbers each token's example) also
    on every key of another example, so that examples sharing a row never see each other."""
    if packed:
        same = (input_mask[:, :, None] == input_mask[:, None, :]) & (input_mask[:, None, :] > 0)
        return ((1.0 - same[:, None].astype(jnp.float32)) * -10000.0).astype(dtype)
    return ((1.0 - input_mask[:, None, None, :].astype(jnp.float32)) * -10000.0).astype(dtype)


class BertForPreTraining(nn.Module):
    """BERT encoder + masked-LM head + next-sentence head.

    Returns (masked-LM logits [batch, predictions, vocab], next-sentence logits [batch, 2]),
    both float32. Packed rows (`packing.py`) also pass `position_ids` and
    `next_sentence_positions` [batch, examples]: attention stays within each example and the
    next-sentence logits are [batch, examples, 2], one per example's own `[CLS]`.
    """

    config: BertConfig

    @nn.compact
    def __call__(
        self,
        input_ids: jax.Array,
        input_mask: jax.Array,
        segment_ids: jax.Array,
        masked_lm_positions: jax.Array,
        train: bool = False,
        position_ids: jax.Array | None = None,
        next_sentence_positions: jax.Array | None = None,
    ) -> tuple[jax.Array, jax.Array]:
        c = self.config
        deterministic = not train
        embeddings = Embeddings(c, name="embeddings")
        x = embeddings(input_ids, segment_ids, deterministic, position_ids)
        bias = attention_bias(input_mask, position_ids is not None, c.dtype)
        for i in range(c.num_hidden_layers):
            x = EncoderLayer(c, name=f"layer_{i}")(x, bias, deterministic)

        cls = x[:, 0] if next_sentence_positions is None else jnp.take_along_axis(
            x, next_sentence_positions[..., None], axis=1)
        pooled = nn.Dense(
            c.hidden_size, dtype=c.dtype, name="pooler",
            kernel_init=_kernel_init(c, ("embed", "mlp")), bias_init=_zeros(("mlp",)),
        )(cls)
        pooled = jnp.tanh(pooled)
        nsp_logits = nn.Dense(
            2, dtype=c.dtype, name="nsp",
            kernel_init=_kernel_init(c, ("mlp", None)), bias_init=_zeros((None,)),
        )(pooled)

        h = jnp.take_along_axis(x, masked_lm_positions[..., None], axis=1)
        h = nn.Dense(
            c.hidden_size, dtype=c.dtype, name="mlm_transform",
            kernel_init=_kernel_init(c, ("embed", "mlp")), bias_init=_zeros(("mlp",)),
        )(h)
        h = nn.LayerNorm(
            epsilon=c.layer_norm_eps, dtype=c.dtype, name="mlm_layer_norm",
            scale_init=nn.with_logical_partitioning(nn.initializers.ones_init(), ("mlp",)),
            bias_init=_zeros(("mlp",)),
        )(_gelu(h))
        output_bias = self.param("mlm_output_bias", _zeros(("vocab",)), (c.vocab_size,))
        mlm_logits = embeddings.attend(h.astype(c.dtype)) + output_bias.astype(c.dtype)
        return mlm_logits.astype(jnp.float32), nsp_logits.astype(jnp.float32)


class BertForQuestionAnswering(nn.Module):
    """BERT encoder + the SQuAD span head of Google's `run_squad.py` (`cls/squad`): one dense
    layer from each token's final hidden state to (start, end) logits.

    Returns (start_logits, end_logits), each [batch, length] float32. The encoder's params have
    the names of `BertForPreTraining`'s (`embeddings`, `layer_<i>`), so a pre-training
    checkpoint's encoder loads into it unchanged; the pooler and pre-training heads are absent
    (the reference's SQuAD model does not use them).
    """

    config: BertConfig

    @nn.compact
    def __call__(
        self, input_ids: jax.Array, input_mask: jax.Array, segment_ids: jax.Array,
        train: bool = False,
    ) -> tuple[jax.Array, jax.Array]:
        c = self.config
        deterministic = not train
        x = Embeddings(c, name="embeddings")(input_ids, segment_ids, deterministic)
        bias = attention_bias(input_mask, False, c.dtype)
        for i in range(c.num_hidden_layers):
            x = EncoderLayer(c, name=f"layer_{i}")(x, bias, deterministic)
        logits = nn.Dense(
            2, dtype=c.dtype, name="qa_outputs",
            kernel_init=_kernel_init(c, ("embed", None)), bias_init=_zeros((None,)),
        )(x).astype(jnp.float32)
        return logits[..., 0], logits[..., 1]
