"""MobileBERT's model keys (`model.arch = "mobilebert"`): the published config
`uncased_L-24_H-128_B-512_A-4_F-4_OPT` (`MOBILEBERT_OPT`; the model: workloads/bert/mobilebert.py).

No JAX here: `tpubench list` loads every config without importing a model."""

from __future__ import annotations

import ml_collections

# The published config (google-research mobilebert/config/uncased_L-24_H-128_B-512_A-4_F-4_OPT
# .json), in the names of BertConfig's fields where they have one.
MOBILEBERT_OPT = dict(
    vocab_size=30522, hidden_size=512, num_hidden_layers=24, num_attention_heads=4,
    intermediate_size=512, max_position_embeddings=512, type_vocab_size=2,
    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.1, initializer_range=0.02,
    embedding_size=128, intra_bottleneck_size=128, num_feedforward_networks=4,
    normalization_type="no_norm", hidden_act="relu",
)

# The minis' encoder (`mobilebert_squad_mini`, `mobilebert_mini`): 2 blocks, inter-block width
# 128 (the BERT mini's hidden size), bottleneck 32, embedding 32, 2 heads, 2 stacked FFNs of 128.
MINI_SIZES = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=128, embedding_size=32, intra_bottleneck_size=32,
                  num_feedforward_networks=2, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)


def use_mobilebert(c: ml_collections.ConfigDict, **sizes: object) -> ml_collections.ConfigDict:
    """`c` (a SQuAD or pre-training config) with the MobileBERT encoder at the published
    sizes, or at `sizes` where given (a mini or smoke model). Keys BERT's encoder does not
    have are added."""
    c.model.arch = "mobilebert"
    c.model.update({k: v for k, v in MOBILEBERT_OPT.items() if k in c.model})
    for key, value in MOBILEBERT_OPT.items():
        if key not in c.model:
            c.model[key] = value
    c.model.update(sizes)
    return c
