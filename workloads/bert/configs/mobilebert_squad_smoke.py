"""A 2-block MobileBERT (32 wide, bottleneck 16, embedding 8, 2 stacked FFNs) with the SQuAD
span head, for one-step tests (not a quality run): `squad_smoke` with the MobileBERT encoder.

    tpubench run bert --config=mobilebert_squad_smoke --workdir=DIR     # synthetic data

Measured: see tests/test_mobilebert.py.
"""

from workloads.bert.configs import squad_smoke
from workloads.bert.configs._mobilebert import use_mobilebert


def get_config():
    """The MobileBERT SQuAD smoke config."""
    c = use_mobilebert(squad_smoke.get_config(), vocab_size=64, hidden_size=32,
                       num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                       max_position_embeddings=64, embedding_size=8, intra_bottleneck_size=16,
                       num_feedforward_networks=2)
    c.config_name = "mobilebert_squad_smoke"
    return c
