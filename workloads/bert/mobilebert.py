"""MobileBERT (Sun et al. 2020, "MobileBERT: a Compact Task-Agnostic BERT for Resource-Limited
Devices") with the SQuAD span head, as pure linen modules: the model MLPerf Mobile v0.7 serves.

The architecture of google-research `mobilebert/modeling.py` under its published config
`mobilebert/config/uncased_L-24_H-128_B-512_A-4_F-4_OPT.json` (`MOBILEBERT_OPT`, in
configs/_mobilebert.py):
  * embeddings: a 128-wide word embedding; the trigram input concatenates each token's
    embedding with its right and left neighbours' (zero past the ends) into 384 features,
    projected by `embedding_transformation` to the 512-wide inter-block hidden state; plus
    512-wide position and token-type embeddings, then the normalization;
  * each of the 24 blocks (`key_query_shared_bottleneck`, `use_bottleneck`): from the 512-wide
    input, a bottleneck `input` dense + norm (128: the block's residual stream) and a shared
    `attention` dense + norm (128: query and key input); self-attention with 4 heads of 32
    (values from the 512-wide input), an output dense to 128 + residual + norm; then 4 stacked
    FFNs (128 -> 512 relu -> 128, residual + norm each); then the output bottleneck dense to 512
    + the block input as residual + norm;
  * normalization "no_norm" (NoNorm: x * gamma + beta, elementwise), activation relu;
  * the attention mask of modeling.py, quantization-friendly: scores * mask - 6 * (1 - mask);
  * no pooler (`classifier_activation: false`); the span head is `run_squad.py`'s `cls/squad`
    (a [2, 512] weight and a bias over every token's final state).
Param names follow the TF variable scopes (`tf_checkpoint.mobilebert_name_map` maps them).
Logical axes: `vocab`, `embed` (512), `heads`, `kv`, `mlp` (FFN 512) and the workload's
`bottleneck` (128: the intra-block width and the word embedding).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

Dtype = Any

# The published config's sizes: `MOBILEBERT_OPT` in workloads/bert/configs/_mobilebert.py (kept
# there so that loading a config, e.g. for `tpubench list`, imports no JAX).


@dataclasses.dataclass(frozen=True)
class MobileBertConfig:
    """Sizes of one MobileBERT (the fields of its TF `bert_config.json`; trigram input, the
    bottleneck and the shared query/key bottleneck are always on, as in the published model)."""

    vocab_size: int = 30522
    hidden_size: int = 512
    num_hidden_layers: int = 24
    num_attention_heads: int = 4
    intermediate_size: int = 512
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.1
    initializer_range: float = 0.02
    embedding_size: int = 128
    intra_bottleneck_size: int = 128
    num_feedforward_networks: int = 4
    normalization_type: str = "no_norm"  # or "layer_norm"
    hidden_act: str = "relu"  # or "gelu"
    layer_norm_eps: float = 1e-12
    dtype: Dtype = jnp.float32

    @property
    def head_dim(self) -> int:
        """Features per attention head (of the bottleneck width)."""
        return self.intra_bottleneck_size // self.num_attention_heads


def _init(c: MobileBertConfig, axes: tuple[str | None, ...]) -> nn.initializers.Initializer:
    return nn.with_logical_partitioning(
        nn.initializers.truncated_normal(c.initializer_range), axes)


def _zeros(axes: tuple[str | None, ...]) -> nn.initializers.Initializer:
    return nn.with_logical_partitioning(nn.initializers.zeros_init(), axes)


def _dense(c: MobileBertConfig, features: int, axes: tuple[str, str], name: str) -> nn.Dense:
    return nn.Dense(features, dtype=c.dtype, name=name, kernel_init=_init(c, axes),
                    bias_init=_zeros(axes[1:]))


class NoNorm(nn.Module):
    """modeling.py's "no_norm": x * gamma + beta (elementwise, no statistics)."""

    axis_name: str
    dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        ones = nn.with_logical_partitioning(nn.initializers.ones_init(), (self.axis_name,))
        scale = self.param("scale", ones, (x.shape[-1],))
        bias = self.param("bias", _zeros((self.axis_name,)), (x.shape[-1],))
        return x * scale.astype(self.dtype) + bias.astype(self.dtype)


def _norm(c: MobileBertConfig, axis_name: str, name: str) -> nn.Module:
    if c.normalization_type == "no_norm":
        return NoNorm(axis_name, c.dtype, name=name)
    if c.normalization_type == "layer_norm":
        ones = nn.with_logical_partitioning(nn.initializers.ones_init(), (axis_name,))
        return nn.LayerNorm(epsilon=c.layer_norm_eps, dtype=c.dtype, name=name,
                            scale_init=ones, bias_init=_zeros((axis_name,)))
    raise ValueError(f"normalization_type={c.normalization_type!r}: no_norm or layer_norm")


def _act(c: MobileBertConfig, x: jax.Array) -> jax.Array:
    return nn.relu(x) if c.hidden_act == "relu" else nn.gelu(x, approximate=True)


class Embeddings(nn.Module):
    """Word embedding (narrow) -> trigram concatenation -> projection to the hidden size, plus
    position and token-type embeddings, then the normalization and dropout."""

    config: MobileBertConfig

    @nn.compact
    def __call__(self, input_ids: jax.Array, segment_ids: jax.Array,
                 deterministic: bool) -> jax.Array:
        c = self.config
        words = nn.Embed(c.vocab_size, c.embedding_size, dtype=c.dtype, name="word_embeddings",
                         embedding_init=_init(c, ("vocab", "bottleneck")))(input_ids)
        zero = jnp.zeros_like(words[:, :1])
        trigram = jnp.concatenate([
            jnp.concatenate([words[:, 1:], zero], axis=1),  # the next token's embedding
            words,
            jnp.concatenate([zero, words[:, :-1]], axis=1),  # the previous token's
        ], axis=-1)
        x = nn.Dense(c.hidden_size, dtype=c.dtype, name="embedding_transformation",
                     kernel_init=_init(c, (None, "embed")), bias_init=_zeros(("embed",)))(trigram)
        positions = jnp.arange(input_ids.shape[1])[None, :]
        x = x + nn.Embed(c.max_position_embeddings, c.hidden_size, dtype=c.dtype,
                         name="position_embeddings",
                         embedding_init=_init(c, (None, "embed")))(positions)
        x = x + nn.Embed(c.type_vocab_size, c.hidden_size, dtype=c.dtype,
                         name="token_type_embeddings",
                         embedding_init=_init(c, (None, "embed")))(segment_ids)
        x = _norm(c, "embed", "norm")(x)
        x = nn.Dropout(c.hidden_dropout_prob)(x, deterministic=deterministic)
        return nn.with_logical_constraint(x, ("batch", "length", "embed"))


class HeadDense(nn.Module):
    """A dense layer whose 3-D kernel is stored as such (each dimension its own logical name):
    [in, heads, kv] (`to_heads`) or [heads, kv, out]."""

    config: MobileBertConfig
    features: int
    in_axis: str
    to_heads: bool

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        c = self.config
        heads, kv = c.num_attention_heads, c.head_dim
        if self.to_heads:
            shape, axes, eq = (x.shape[-1], heads, kv), (self.in_axis, "heads", "kv"), \
                "...e,ehk->...hk"
            bias_shape, bias_axes = (heads, kv), ("heads", "kv")
        else:
            shape, axes, eq = (heads, kv, self.features), ("heads", "kv", self.in_axis), \
                "...hk,hke->...e"
            bias_shape, bias_axes = (self.features,), (self.in_axis,)
        kernel = self.param("kernel", _init(c, axes), shape)
        bias = self.param("bias", _zeros(bias_axes), bias_shape)
        return jnp.einsum(eq, x.astype(c.dtype), kernel.astype(c.dtype)) + bias.astype(c.dtype)


class Attention(nn.Module):
    """Multi-head attention inside the bottleneck: query and key from the shared bottleneck
    input, values from the block's wide input; modeling.py's -6 mask."""

    config: MobileBertConfig

    @nn.compact
    def __call__(self, qk_input: jax.Array, v_input: jax.Array, mask: jax.Array,
                 deterministic: bool) -> jax.Array:
        c = self.config
        q = HeadDense(c, 0, "bottleneck", True, name="query")(qk_input)
        k = HeadDense(c, 0, "bottleneck", True, name="key")(qk_input)
        v = HeadDense(c, 0, "embed", True, name="value")(v_input)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(c.head_dim)
        m = mask[:, None, None, :].astype(scores.dtype)
        scores = scores * m - 6.0 * (1.0 - m)
        probs = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(c.dtype)
        self.sow("intermediates", "attention_weights", probs)  # as flax's, layer_transfer.py
        probs = nn.Dropout(c.attention_probs_dropout_prob)(probs, deterministic=deterministic)
        context = jnp.einsum("bhqk,bkhd->bqhd", probs, v)
        return HeadDense(c, c.intra_bottleneck_size, "bottleneck", False, name="out")(context)


class Block(nn.Module):
    """One MobileBERT block (modeling.py `transformer_model`, use_bottleneck and
    key_query_shared_bottleneck)."""

    config: MobileBertConfig

    @nn.compact
    def __call__(self, x: jax.Array, mask: jax.Array, deterministic: bool) -> jax.Array:
        c = self.config
        b = c.intra_bottleneck_size
        h = _norm(c, "bottleneck", "bottleneck_input_norm")(
            _dense(c, b, ("embed", "bottleneck"), "bottleneck_input")(x))
        shared = _norm(c, "bottleneck", "bottleneck_attention_norm")(
            _dense(c, b, ("embed", "bottleneck"), "bottleneck_attention")(x))
        attn = Attention(c, name="attention")(shared, x, mask, deterministic)
        h = _norm(c, "bottleneck", "attention_norm")(attn + h)
        for j in range(c.num_feedforward_networks):
            # modeling.py names the first F-1 FFNs ffn_layer_<j> and the last one plainly.
            name = f"ffn_{j}" if j < c.num_feedforward_networks - 1 else "ffn"
            f = _act(c, _dense(c, c.intermediate_size, ("bottleneck", "mlp"),
                               f"{name}_intermediate")(h))
            f = nn.with_logical_constraint(f, ("batch", "length", "mlp"))
            f = _dense(c, b, ("mlp", "bottleneck"), f"{name}_output")(f)
            h = _norm(c, "bottleneck", f"{name}_norm")(f + h)
        y = _dense(c, c.hidden_size, ("bottleneck", "embed"), "output_bottleneck")(h)
        y = nn.Dropout(c.hidden_dropout_prob)(y, deterministic=deterministic)
        y = _norm(c, "embed", "output_norm")(y + x)
        self.sow("intermediates", "hidden", y)  # the block's output (layer_transfer.py)
        return nn.with_logical_constraint(y, ("batch", "length", "embed"))


def _encode(c: MobileBertConfig, input_ids: jax.Array, input_mask: jax.Array,
            segment_ids: jax.Array, deterministic: bool) -> jax.Array:
    """The encoder (`embeddings`, `layer_<i>`: the names every head model shares, which
    `pretrained.py` carries from a pre-training run to a fine-tuning one); called inside a
    compact `__call__`, so its modules belong to the caller."""
    x = Embeddings(c, name="embeddings")(input_ids, segment_ids, deterministic)
    for i in range(c.num_hidden_layers):
        x = Block(c, name=f"layer_{i}")(x, input_mask, deterministic)
    return x


class MobileBertForQuestionAnswering(nn.Module):
    """MobileBERT encoder + the SQuAD span head: (start_logits, end_logits), each
    [batch, length] float32, the interface of `BertForQuestionAnswering`."""

    config: MobileBertConfig

    @nn.compact
    def __call__(self, input_ids: jax.Array, input_mask: jax.Array, segment_ids: jax.Array,
                 train: bool = False) -> tuple[jax.Array, jax.Array]:
        c = self.config
        x = _encode(c, input_ids, input_mask, segment_ids, not train)
        logits = nn.Dense(2, dtype=c.dtype, name="qa_outputs",
                          kernel_init=_init(c, ("embed", None)),
                          bias_init=_zeros((None,)))(x).astype(jnp.float32)
        return logits[..., 0], logits[..., 1]


class MobileBertForPreTraining(nn.Module):
    """MobileBERT encoder + masked-LM and next-sentence heads: (masked-LM logits [batch,
    predictions, vocab], next-sentence logits [batch, 2]), both float32, the interface of
    `BertForPreTraining` (unpacked rows only). The heads of google-research
    `mobilebert/run_pretraining.py` (as ported in Hugging Face `modeling_mobilebert.py`
    `MobileBertLMPredictionHead`): the masked-LM transform (dense + activation + a layer norm,
    whatever `normalization_type`), then logits against the word embedding table [vocab,
    embedding_size] concatenated with an extra [vocab, hidden - embedding_size] table, plus a
    bias; the next-sentence dense on the `[CLS]` state (`classifier_activation: false`: no
    pooler)."""

    config: MobileBertConfig

    @nn.compact
    def __call__(self, input_ids: jax.Array, input_mask: jax.Array, segment_ids: jax.Array,
                 masked_lm_positions: jax.Array, train: bool = False,
                 position_ids: jax.Array | None = None,
                 next_sentence_positions: jax.Array | None = None,
                 ) -> tuple[jax.Array, jax.Array]:
        if position_ids is not None or next_sentence_positions is not None:
            raise ValueError("MobileBertForPreTraining takes unpacked rows (data.packed=False)")
        c = self.config
        x = _encode(c, input_ids, input_mask, segment_ids, not train)
        nsp_logits = nn.Dense(2, dtype=c.dtype, name="nsp", kernel_init=_init(c, ("embed", None)),
                              bias_init=_zeros((None,)))(x[:, 0])
        h = jnp.take_along_axis(x, masked_lm_positions[..., None], axis=1)
        h = _act(c, _dense(c, c.hidden_size, ("embed", "mlp"), "mlm_transform")(h))
        layer_norm = dataclasses.replace(c, normalization_type="layer_norm")
        h = _norm(layer_norm, "mlp", "mlm_layer_norm")(h)
        table = nn.unbox(self.variables["params"]["embeddings"]["word_embeddings"]["embedding"])
        extra = self.param("mlm_extra_output", _init(c, ("vocab", None)),
                           (c.vocab_size, c.hidden_size - c.embedding_size))
        weights = jnp.concatenate([table, extra], axis=1).astype(c.dtype)
        bias = self.param("mlm_output_bias", _zeros(("vocab",)), (c.vocab_size,))
        mlm_logits = jnp.einsum("bpe,ve->bpv", h.astype(c.dtype), weights) + bias.astype(c.dtype)
        return mlm_logits.astype(jnp.float32), nsp_logits.astype(jnp.float32)
