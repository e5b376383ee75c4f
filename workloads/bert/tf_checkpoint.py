"""Start BERT from a TensorFlow checkpoint (`model.ckpt-NNNN` + `bert_config.json`).

The MLPerf v0.7 BERT benchmark starts from a given TF1 checkpoint. Variables are read with
`tf.train.load_checkpoint` under the TF1 names of Google's `modeling.py` / the MLPerf reference
(`bert/embeddings/word_embeddings`, `bert/encoder/layer_N/attention/self/query/kernel`,
`cls/predictions/...`, `cls/seq_relationship/...`) and placed into the Flax tree of
`workloads.bert.model.BertForPreTraining`. Optimizer slots and the global step in the file are
ignored (the reference restores only the trainable variables).
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Callable

import numpy as np

from tpubench.errors import UsageError
from workloads.bert.model import BertConfig

FlaxPath = tuple[str, ...]
Transform = Callable[[np.ndarray], np.ndarray]

# bert_config.json fields that fix the shapes of the params.
SHAPE_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "max_position_embeddings", "type_vocab_size",
)

# ... and those MobileBERT adds (google-research mobilebert/modeling.py BertConfig).
MOBILEBERT_SHAPE_FIELDS = ("embedding_size", "intra_bottleneck_size", "num_feedforward_networks")


def name_map(config: BertConfig) -> dict[str, tuple[FlaxPath, Transform]]:
    """TF1 variable name -> (path in the Flax params, array transform TF -> Flax)."""
    heads, head_dim, hidden = config.num_attention_heads, config.head_dim, config.hidden_size

    def same(x: np.ndarray) -> np.ndarray:
        return x

    def split_heads_out(x: np.ndarray) -> np.ndarray:  # [hidden, heads*kv] -> [hidden, heads, kv]
        return x.reshape(hidden, heads, head_dim)

    def split_heads_bias(x: np.ndarray) -> np.ndarray:  # [heads*kv] -> [heads, kv]
        return x.reshape(heads, head_dim)

    def split_heads_in(x: np.ndarray) -> np.ndarray:  # [heads*kv, hidden] -> [heads, kv, hidden]
        return x.reshape(heads, head_dim, hidden)

    def layer_norm(tf: str, flax: FlaxPath) -> dict[str, tuple[FlaxPath, Transform]]:
        return {f"{tf}/gamma": (flax + ("scale",), same), f"{tf}/beta": (flax + ("bias",), same)}

    def dense(tf: str, flax: FlaxPath) -> dict[str, tuple[FlaxPath, Transform]]:
        return {f"{tf}/kernel": (flax + ("kernel",), same), f"{tf}/bias": (flax + ("bias",), same)}

    emb = ("embeddings",)
    m: dict[str, tuple[FlaxPath, Transform]] = {
        "bert/embeddings/word_embeddings": (emb + ("word_embeddings", "embedding"), same),
        "bert/embeddings/position_embeddings": (emb + ("position_embeddings", "embedding"), same),
        "bert/embeddings/token_type_embeddings": (
            emb + ("token_type_embeddings", "embedding"), same,
        ),
        **layer_norm("bert/embeddings/LayerNorm", emb + ("layer_norm",)),
    }
    for i in range(config.num_hidden_layers):
        tf, fl = f"bert/encoder/layer_{i}", (f"layer_{i}",)
        for proj in ("query", "key", "value"):
            m[f"{tf}/attention/self/{proj}/kernel"] = (
                fl + ("attention", proj, "kernel"), split_heads_out,
            )
            m[f"{tf}/attention/self/{proj}/bias"] = (
                fl + ("attention", proj, "bias"), split_heads_bias,
            )
        m[f"{tf}/attention/output/dense/kernel"] = (
            fl + ("attention", "out", "kernel"), split_heads_in,
        )
        m[f"{tf}/attention/output/dense/bias"] = (fl + ("attention", "out", "bias"), same)
        m.update(layer_norm(f"{tf}/attention/output/LayerNorm", fl + ("attention_layer_norm",)))
        m.update(dense(f"{tf}/intermediate/dense", fl + ("intermediate",)))
        m.update(dense(f"{tf}/output/dense", fl + ("output",)))
        m.update(layer_norm(f"{tf}/output/LayerNorm", fl + ("output_layer_norm",)))
    m.update(dense("bert/pooler/dense", ("pooler",)))
    m.update(dense("cls/predictions/transform/dense", ("mlm_transform",)))
    m.update(layer_norm("cls/predictions/transform/LayerNorm", ("mlm_layer_norm",)))
    m["cls/predictions/output_bias"] = (("mlm_output_bias",), same)
    # The reference computes matmul(pooled, output_weights, transpose_b=True): [2, hidden].
    m["cls/seq_relationship/output_weights"] = (("nsp", "kernel"), np.transpose)
    m["cls/seq_relationship/output_bias"] = (("nsp", "bias"), same)
    return m


def squad_name_map(config: BertConfig, with_head: bool) -> dict[str, tuple[FlaxPath, Transform]]:
    """TF1 names -> Flax paths of `BertForQuestionAnswering`: the encoder of `name_map` and,
    when `with_head` (a SQuAD fine-tuned checkpoint), `run_squad.py`'s `cls/squad` head, whose
    `output_weights` are [2, hidden] (used transposed, as `nsp`)."""
    m = {k: v for k, v in name_map(config).items()
         if v[0][0] == "embeddings" or v[0][0].startswith("layer_")}
    if with_head:
        m["cls/squad/output_weights"] = (("qa_outputs", "kernel"), np.transpose)
        m["cls/squad/output_bias"] = (("qa_outputs", "bias"), lambda x: x)
    return m


def mobilebert_name_map(config, with_head: bool) -> dict[str, tuple[FlaxPath, Transform]]:
    """TF1 names of google-research `mobilebert/modeling.py` (and `run_squad.py`'s `cls/squad`
    head when `with_head`) -> Flax paths of `mobilebert.MobileBertForQuestionAnswering`.

    modeling.py's scopes: `bert/embeddings/{word_embeddings, embedding_transformation,
    position_embeddings, token_type_embeddings, FakeLayerNorm}`; per block
    `bert/encoder/layer_<i>/` + `bottleneck/{input,attention}/{dense,FakeLayerNorm}`,
    `attention/self/{query,key,value}`, `attention/output/{dense,FakeLayerNorm}`,
    `ffn_layer_<j>/{intermediate/dense,output/dense,output/FakeLayerNorm}` for the first F-1
    FFNs, `intermediate/dense`, `output/{dense,FakeLayerNorm}` for the last, and
    `output/bottleneck/{dense,FakeLayerNorm}`. A no_norm's variables are `FakeLayerNorm/{gamma,
    beta}`, a layer_norm's `LayerNorm/{gamma,beta}`. The attention kernels are [in, heads*kv]
    (query, key, value) and [heads*kv, out] (output), split into heads here.
    """
    heads, kv = config.num_attention_heads, config.head_dim
    norm = "FakeLayerNorm" if config.normalization_type == "no_norm" else "LayerNorm"

    def same(x: np.ndarray) -> np.ndarray:
        return x

    def to_heads(x: np.ndarray) -> np.ndarray:  # [in, heads*kv] -> [in, heads, kv]
        return x.reshape(x.shape[0], heads, kv)

    def from_heads(x: np.ndarray) -> np.ndarray:  # [heads*kv, out] -> [heads, kv, out]
        return x.reshape(heads, kv, x.shape[-1])

    def dense(tf: str, flax: FlaxPath, kernel: Transform = same,
              bias: Transform = same) -> dict[str, tuple[FlaxPath, Transform]]:
        return {f"{tf}/kernel": (flax + ("kernel",), kernel),
                f"{tf}/bias": (flax + ("bias",), bias)}

    def norm_of(tf: str, flax: FlaxPath) -> dict[str, tuple[FlaxPath, Transform]]:
        return {f"{tf}/{norm}/gamma": (flax + ("scale",), same),
                f"{tf}/{norm}/beta": (flax + ("bias",), same)}

    emb = ("embeddings",)
    m: dict[str, tuple[FlaxPath, Transform]] = {
        f"bert/embeddings/{name}": (emb + (name, "embedding"), same)
        for name in ("word_embeddings", "position_embeddings", "token_type_embeddings")}
    m.update(dense("bert/embeddings/embedding_transformation", emb + ("embedding_transformation",)))
    m.update(norm_of("bert/embeddings", emb + ("norm",)))
    last = config.num_feedforward_networks - 1
    for i in range(config.num_hidden_layers):
        tf, fl = f"bert/encoder/layer_{i}", (f"layer_{i}",)
        for part in ("input", "attention"):
            m.update(dense(f"{tf}/bottleneck/{part}/dense", fl + (f"bottleneck_{part}",)))
            m.update(norm_of(f"{tf}/bottleneck/{part}", fl + (f"bottleneck_{part}_norm",)))
        for proj in ("query", "key", "value"):
            m.update(dense(f"{tf}/attention/self/{proj}", fl + ("attention", proj),
                           to_heads, lambda x: x.reshape(heads, kv)))
        m.update(dense(f"{tf}/attention/output/dense", fl + ("attention", "out"), from_heads))
        m.update(norm_of(f"{tf}/attention/output", fl + ("attention_norm",)))
        for j in range(config.num_feedforward_networks):
            scope, name = (f"{tf}/ffn_layer_{j}", f"ffn_{j}") if j < last else (tf, "ffn")
            m.update(dense(f"{scope}/intermediate/dense", fl + (f"{name}_intermediate",)))
            m.update(dense(f"{scope}/output/dense", fl + (f"{name}_output",)))
            m.update(norm_of(f"{scope}/output", fl + (f"{name}_norm",)))
        m.update(dense(f"{tf}/output/bottleneck/dense", fl + ("output_bottleneck",)))
        m.update(norm_of(f"{tf}/output/bottleneck", fl + ("output_norm",)))
    if with_head:
        m["cls/squad/output_weights"] = (("qa_outputs", "kernel"), np.transpose)
        m["cls/squad/output_bias"] = (("qa_outputs", "bias"), same)
    return m


def read_bert_config(path: str | os.PathLike) -> dict:
    """The fields of a TF `bert_config.json`."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise UsageError(f"bert_config.json not found at {path}.")
    return json.loads(path.read_text())


def check_bert_config(bert_config: dict, config: BertConfig) -> None:
    """`UsageError` when the checkpoint's `bert_config.json` disagrees with the model config."""
    diffs = [
        f"{k}: checkpoint {bert_config.get(k)!r} vs config {getattr(config, k)!r}"
        for k in SHAPE_FIELDS + MOBILEBERT_SHAPE_FIELDS
        if hasattr(config, k) and bert_config.get(k) != getattr(config, k)
    ]
    if diffs:
        raise UsageError(
            "The checkpoint's bert_config.json does not match the model config ("
            + "; ".join(diffs) + "). Set --config.model.<field> to the checkpoint's values."
        )


def checkpoint_exists(prefix: str | os.PathLike) -> bool:
    """True when a TF checkpoint with this prefix (`.../model.ckpt-28252`) is on disk."""
    return pathlib.Path(f"{os.fspath(prefix)}.index").is_file()


def load_params(prefix: str | os.PathLike, config: BertConfig,
                mapping: dict[str, tuple[FlaxPath, Transform]] | None = None) -> dict:
    """The Flax params (nested dict of float32 numpy arrays) stored in a TF BERT checkpoint.

    Every param of the model must be in the checkpoint with the expected shape; anything else in
    the file (optimizer slots, global_step) is ignored. `mapping` (default `name_map`) says
    which variables to read and where they go.
    """
    import tensorflow as tf  # the `tfds` extra; only needed when starting from a checkpoint

    reader = tf.train.load_checkpoint(os.fspath(prefix))
    stored = reader.get_variable_to_shape_map()
    mapping = name_map(config) if mapping is None else mapping
    missing = sorted(n for n in mapping if n not in stored)
    if missing:
        raise UsageError(
            f"The checkpoint {prefix} lacks {len(missing)} BERT variables, e.g. {missing[:3]}."
        )
    params: dict = {}
    for tf_name, (path, transform) in mapping.items():
        value = transform(np.asarray(reader.get_tensor(tf_name), np.float32))
        node = params
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return params
