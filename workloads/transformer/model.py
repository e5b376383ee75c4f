"""Transformer encoder-decoder for translation (pure linen modules).

Pre-layer-norm Transformer as in the MLPerf v0.7 reference (fairseq
`transformer_wmt_en_de_big_t2t`): one embedding table shared by source, target and the output
projection; sinusoidal positions; biased attention projections. Transformer-big is 6+6
layers, d 1024, 16 heads, FF 4096.

Training inputs may be packed: several sentence pairs per row, told apart by `*_segmentation`
(1, 2, ...; 0 = padding) with per-segment `*_position`. Every param carries logical axis names
("vocab", "embed", "heads", "kv", "mlp") that `tpubench.mesh` maps onto the device mesh: "heads"
and "mlp" over "tensor" give Megatron-style model parallelism.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from tpubench.text.ids import PAD_ID  # also the decoder's start token (targets shift by one PAD)

_xavier = nn.initializers.xavier_uniform()
_zeros = nn.initializers.zeros


def _init(fn: Any, names: tuple[str | None, ...]) -> Any:
    return nn.with_logical_partitioning(fn, names)


def _headed_init(fn: Any, names: tuple[str, ...], num_heads: int, heads_first: bool) -> Any:
    """For attention projections: `DenseGeneral` asks its initializer for the flattened
    [in, heads * head_dim] (or [heads * head_dim, out]) kernel; this returns it already split
    into heads, so its logical names match its rank when the harness applies them."""

    def init(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> Any:
        value = fn(key, shape, dtype)
        if heads_first:
            split = (num_heads, shape[0] // num_heads, *shape[1:])
        else:
            split = (*shape[:-1], num_heads, shape[-1] // num_heads)
        return nn.LogicallyPartitioned(value.reshape(split), names)

    return init


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Hyperparameters of the model (hashable, so modules can hold it)."""

    vocab_size: int
    emb_dim: int = 1024
    num_heads: int = 16
    num_layers: int = 6  # per side: encoder and decoder each
    mlp_dim: int = 4096
    max_len: int = 256
    dropout_rate: float = 0.1
    attention_dropout_rate: float = 0.1
    dtype: Any = jnp.float32
    deterministic: bool = True


def sinusoid_table(max_len: int, dim: int) -> np.ndarray:
    """[max_len, dim] fixed sinusoidal position encodings (sin half, cos half)."""
    position = np.arange(max_len)[:, None]
    inv_freq = np.exp(-np.log(10000.0) * np.arange(dim // 2) / max(dim // 2 - 1, 1))
    angles = position * inv_freq[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float32)


def shift_right(x: jax.Array, segmentation: jax.Array | None = None) -> jax.Array:
    """Decoder inputs: targets moved one right with PAD as start token, per packed segment."""
    shifted = jnp.pad(x, ((0, 0), (1, 0)))[:, :-1]
    if segmentation is not None:
        seg_shifted = jnp.pad(segmentation, ((0, 0), (1, 0)))[:, :-1]
        shifted = jnp.where(segmentation == seg_shifted, shifted, PAD_ID)
    return shifted


def add_positions(x: jax.Array, max_len: int, positions: jax.Array | None = None) -> jax.Array:
    """Adds sinusoidal positions: 0..len-1, or the given per-token (packed/decode) positions."""
    table = jnp.asarray(sinusoid_table(max_len, x.shape[-1]), x.dtype)
    if positions is None:
        return x + table[None, : x.shape[1]]
    return x + jnp.take(table, positions, axis=0)


class Mlp(nn.Module):
    """Position-wise feed-forward block: Dense(mlp_dim) -> ReLU -> Dense(emb_dim)."""

    config: TransformerConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        c = self.config
        h = nn.Dense(
            c.mlp_dim, dtype=c.dtype, kernel_init=_init(_xavier, ("embed", "mlp")),
            bias_init=_init(_zeros, ("mlp",)), name="wi",
        )(x)
        h = nn.with_logical_constraint(nn.relu(h), ("batch", "length", "mlp"))
        h = nn.Dropout(c.dropout_rate)(h, deterministic=c.deterministic)
        return nn.Dense(
            x.shape[-1], dtype=c.dtype, kernel_init=_init(_xavier, ("mlp", "embed")),
            bias_init=_init(_zeros, ("embed",)), name="wo",
        )(h)


def _layer_norm(c: TransformerConfig, name: str) -> nn.LayerNorm:
    return nn.LayerNorm(
        dtype=c.dtype, scale_init=_init(nn.initializers.ones, ("embed",)),
        bias_init=_init(_zeros, ("embed",)), name=name,
    )


class Attention(nn.Module):
    """Multi-head dot-product attention with biased projections.

    Decoding passes `cache` (this layer's [batch, max_len, heads, head_dim] keys and values)
    and the step `index`: the step's key/value are written at `index` and the query attends to
    positions <= index. Cross-attention may take precomputed `kv` (see `kv`), so that beam
    search projects the encoder output once instead of at every step.
    """

    config: TransformerConfig

    def setup(self) -> None:
        c = self.config
        head_dim = c.emb_dim // c.num_heads

        def proj(name: str) -> nn.DenseGeneral:
            return nn.DenseGeneral(
                (c.num_heads, head_dim), dtype=c.dtype, name=name,
                kernel_init=_headed_init(_xavier, ("embed", "heads", "kv"), c.num_heads, False),
                bias_init=_headed_init(_zeros, ("heads", "kv"), c.num_heads, False),
            )

        self.query, self.key, self.value = proj("query"), proj("key"), proj("value")
        self.out = nn.DenseGeneral(
            c.emb_dim, axis=(-2, -1), dtype=c.dtype, name="out",
            kernel_init=_headed_init(_xavier, ("heads", "kv", "embed"), c.num_heads, True),
            bias_init=_init(_zeros, ("embed",)),
        )

    def kv(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Keys and values [batch, len, heads, head_dim] of `x`."""
        return self.key(x), self.value(x)

    def __call__(
        self, x: jax.Array, context: jax.Array | None = None, mask: jax.Array | None = None,
        kv: tuple[jax.Array, jax.Array] | None = None,
        cache: tuple[jax.Array, jax.Array] | None = None, index: jax.Array | None = None,
    ) -> tuple[jax.Array, tuple[jax.Array, jax.Array] | None]:
        """(output, updated cache or None). `context` defaults to `x` (self-attention)."""
        c = self.config
        q = self.query(x)
        k, v = kv if kv is not None else self.kv(x if context is None else context)
        if cache is not None:
            k = jax.lax.dynamic_update_slice_in_dim(cache[0], k.astype(cache[0].dtype), index, 1)
            v = jax.lax.dynamic_update_slice_in_dim(cache[1], v.astype(cache[1].dtype), index, 1)
            cache = (k, v)
            mask = (jnp.arange(k.shape[1]) <= index)[None, None, None, :]
        deterministic = c.deterministic or c.attention_dropout_rate == 0.0
        h = nn.dot_product_attention(
            q, k, v, mask=mask, dropout_rate=c.attention_dropout_rate, broadcast_dropout=False,
            deterministic=deterministic,
            dropout_rng=None if deterministic else self.make_rng("dropout"), dtype=c.dtype,
        )
        return self.out(h), cache


class EncoderLayer(nn.Module):
    """Self-attention + feed-forward, each pre-normed and residual."""

    config: TransformerConfig

    @nn.compact
    def __call__(self, x: jax.Array, mask: jax.Array) -> jax.Array:
        c = self.config
        y = _layer_norm(c, "ln_attn")(x)
        y, _ = Attention(c, name="self_attn")(y, mask=mask)
        x = x + nn.Dropout(c.dropout_rate)(y, deterministic=c.deterministic)
        y = Mlp(c, name="mlp")(_layer_norm(c, "ln_mlp")(x))
        x = x + nn.Dropout(c.dropout_rate)(y, deterministic=c.deterministic)
        return nn.with_logical_constraint(x, ("batch", "length", "embed"))


class DecoderLayer(nn.Module):
    """Causal self-attention, encoder-decoder attention, feed-forward; pre-normed, residual."""

    config: TransformerConfig

    def setup(self) -> None:
        c = self.config
        self.ln_self, self.ln_cross, self.ln_mlp = (
            _layer_norm(c, n) for n in ("ln_self", "ln_cross", "ln_mlp"))
        self.self_attn = Attention(c)
        self.cross_attn = Attention(c)
        self.mlp = Mlp(c)
        self.dropout = nn.Dropout(c.dropout_rate)

    def cross_kv(self, encoded: jax.Array) -> tuple[jax.Array, jax.Array]:
        """This layer's encoder-decoder keys/values (constant while decoding one batch)."""
        return self.cross_attn.kv(encoded)

    def __call__(
        self, y: jax.Array, encoded: jax.Array | None, self_mask: jax.Array | None,
        cross_mask: jax.Array, cross_kv: tuple[jax.Array, jax.Array] | None = None,
        cache: tuple[jax.Array, jax.Array] | None = None, index: jax.Array | None = None,
    ) -> tuple[jax.Array, tuple[jax.Array, jax.Array] | None]:
        """(output, updated self-attention cache or None)."""
        det = self.config.deterministic
        z, cache = self.self_attn(self.ln_self(y), mask=self_mask, cache=cache, index=index)
        y = y + self.dropout(z, deterministic=det)
        z, _ = self.cross_attn(self.ln_cross(y), encoded, mask=cross_mask, kv=cross_kv)
        y = y + self.dropout(z, deterministic=det)
        y = y + self.dropout(self.mlp(self.ln_mlp(y)), deterministic=det)
        return nn.with_logical_constraint(y, ("batch", "length", "embed")), cache


class Transformer(nn.Module):
    """Encoder-decoder with a shared embedding; `__call__` returns target logits (teacher forcing).

    For beam search: `encode` once, `cross_kv` once, then `decode_step` per token with an
    explicit self-attention cache (`init_cache`).
    """

    config: TransformerConfig

    def setup(self) -> None:
        c = self.config
        self.embed = nn.Embed(
            c.vocab_size, c.emb_dim,
            embedding_init=_init(
                nn.initializers.normal(stddev=c.emb_dim**-0.5), ("vocab", "embed")),
            name="shared_embedding",
        )
        self.encoder_layers = [EncoderLayer(c, name=f"encoder_{i}") for i in range(c.num_layers)]
        self.decoder_layers = [DecoderLayer(c, name=f"decoder_{i}") for i in range(c.num_layers)]
        self.encoder_norm = _layer_norm(c, "encoder_norm")
        self.decoder_norm = _layer_norm(c, "decoder_norm")
        self.dropout = nn.Dropout(c.dropout_rate)

    def _embed(self, tokens: jax.Array, positions: jax.Array | None) -> jax.Array:
        # Scaled by sqrt(d) because the table is initialised with std d^-0.5 (it is also the
        # output projection, where that scale keeps initial logits O(1)).
        x = self.embed(tokens.astype(jnp.int32)) * jnp.sqrt(self.config.emb_dim)
        x = add_positions(x.astype(self.config.dtype), self.config.max_len, positions)
        return self.dropout(x, deterministic=self.config.deterministic)

    def _logits(self, y: jax.Array) -> jax.Array:
        logits = self.embed.attend(self.decoder_norm(y).astype(jnp.float32))
        return nn.with_logical_constraint(logits, ("batch", "length", "vocab"))

    def encode(
        self, inputs: jax.Array, positions: jax.Array | None = None,
        segmentation: jax.Array | None = None,
    ) -> jax.Array:
        """[batch, in_len] token ids -> [batch, in_len, emb_dim] encodings."""
        c = self.config
        mask = nn.make_attention_mask(inputs > 0, inputs > 0, dtype=c.dtype)
        if segmentation is not None:
            mask = nn.combine_masks(
                mask, nn.make_attention_mask(segmentation, segmentation, jnp.equal, dtype=c.dtype)
            )
        x = self._embed(inputs, positions)
        for layer in self.encoder_layers:
            x = layer(x, mask)
        return self.encoder_norm(x)

    def decode(
        self, encoded: jax.Array, inputs: jax.Array, targets: jax.Array,
        target_positions: jax.Array | None = None, input_segmentation: jax.Array | None = None,
        target_segmentation: jax.Array | None = None,
    ) -> jax.Array:
        """Teacher-forced logits [batch, tgt_len, vocab]; `targets` are shifted right here."""
        c = self.config
        self_mask = nn.combine_masks(
            nn.make_attention_mask(targets > 0, targets > 0, dtype=c.dtype),
            nn.make_causal_mask(targets, dtype=c.dtype),
        )
        cross_mask = nn.make_attention_mask(targets > 0, inputs > 0, dtype=c.dtype)
        if target_segmentation is not None:
            self_mask = nn.combine_masks(self_mask, nn.make_attention_mask(
                target_segmentation, target_segmentation, jnp.equal, dtype=c.dtype))
            cross_mask = nn.combine_masks(cross_mask, nn.make_attention_mask(
                target_segmentation, input_segmentation, jnp.equal, dtype=c.dtype))
        y = self._embed(shift_right(targets, target_segmentation), target_positions)
        for layer in self.decoder_layers:
            y, _ = layer(y, encoded, self_mask, cross_mask)
        return self._logits(y)

    def cross_kv(self, encoded: jax.Array) -> tuple[tuple[jax.Array, jax.Array], ...]:
        """Every decoder layer's encoder-decoder keys/values."""
        return tuple(layer.cross_kv(encoded) for layer in self.decoder_layers)

    def decode_step(
        self, ids: jax.Array, index: jax.Array, inputs: jax.Array,
        cross_kv: tuple[tuple[jax.Array, jax.Array], ...],
        cache: tuple[tuple[jax.Array, jax.Array], ...],
    ) -> tuple[jax.Array, tuple[tuple[jax.Array, jax.Array], ...]]:
        """One token per row: ids [batch, 1] at position `index` -> (logits [batch, vocab],
        cache with this position's keys/values written)."""
        c = self.config
        cross_mask = nn.make_attention_mask(jnp.ones_like(ids) > 0, inputs > 0, dtype=c.dtype)
        y = self._embed(ids, jnp.full(ids.shape, index, jnp.int32))
        new_cache = []
        for layer, kv, layer_cache in zip(self.decoder_layers, cross_kv, cache, strict=True):
            y, layer_cache = layer(y, None, None, cross_mask, kv, layer_cache, index)
            new_cache.append(layer_cache)
        return self._logits(y)[:, 0], tuple(new_cache)

    def __call__(
        self, inputs: jax.Array, targets: jax.Array, input_positions: jax.Array | None = None,
        target_positions: jax.Array | None = None, input_segmentation: jax.Array | None = None,
        target_segmentation: jax.Array | None = None,
    ) -> jax.Array:
        """Teacher-forced logits [batch, tgt_len, vocab] for (packed) inputs and targets."""
        encoded = self.encode(inputs, input_positions, input_segmentation)
        return self.decode(
            encoded, inputs, targets, target_positions, input_segmentation, target_segmentation
        )


def init_cache(
    config: TransformerConfig, batch_size: int, length: int
) -> tuple[tuple[jax.Array, jax.Array], ...]:
    """Zero self-attention keys/values [batch, length, heads, head_dim] for every decoder layer."""
    shape = (batch_size, length, config.num_heads, config.emb_dim // config.num_heads)
    return tuple(
        (jnp.zeros(shape, config.dtype), jnp.zeros(shape, config.dtype))
        for _ in range(config.num_layers)
    )
