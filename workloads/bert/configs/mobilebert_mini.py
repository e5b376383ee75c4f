"""Mini pre-training of the MobileBERT mini's encoder: the BERT mini (`mini`: Shakespeare, seq
16, half the words masked, masked-LM + next-sentence loss, AdamW) with the encoder of
`mobilebert_squad_mini` (2 blocks, inter-block 128, bottleneck 32, embedding 32, 2 heads, 2
stacked FFNs of 128) and MobileBERT's pre-training heads (`MobileBertForPreTraining`).

    tpubench run bert --config=mobilebert_mini --workdir=PRE
    tpubench run bert --config=mobilebert_squad_mini --config.model.init_params=PRE --workdir=DIR

Not a benchmark of its own: it exists to give `mobilebert_squad_mini` a pre-trained encoder
(`model.init_params`, `workloads/bert/pretrained.py`), as `mini` does for the BERT SQuAD
minis. Target, schedule and eval: `mini`'s. Measured: MEASUREMENTS PENDING.
"""

from workloads.bert.configs import mini
from workloads.bert.configs._mobilebert import MINI_SIZES, use_mobilebert


def get_config():
    """The MobileBERT pre-training mini config."""
    c = mini.get_config()
    c = use_mobilebert(c, vocab_size=int(c.model.vocab_size),
                       max_position_embeddings=int(c.model.max_position_embeddings),
                       **MINI_SIZES)
    c.config_name = "mobilebert_mini"
    return c
