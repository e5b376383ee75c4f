"""Mini pre-training of the MobileBERT mini's encoder: the BERT mini (`mini`: Shakespeare, seq
16, half the words masked, masked-LM + next-sentence loss, AdamW) with the encoder of
`mobilebert_squad_mini` (2 blocks, inter-block 128, bottleneck 32, embedding 32, 2 heads, 2
stacked FFNs of 128) and MobileBERT's pre-training heads (`MobileBertForPreTraining`).

    tpubench run bert --config=mobilebert_mini --workdir=PRE
    tpubench run bert --config=mobilebert_squad_mini --config.model.init_params=PRE --workdir=DIR

Not a benchmark of its own: it exists to give `mobilebert_squad_mini` a pre-trained encoder
(`model.init_params`, `workloads/bert/pretrained.py`), as `mini` does for the BERT SQuAD
minis. Target, schedule and eval: `mini`'s (masked-word accuracy of the held-out plays).
Measured 2026-12-02e (seed 0, `tpubench run` as above), accuracy at steps 1,000, 1,100, ...,
2,000: .1574 .1598 .1626 .1622 .1645 .1662 .1662 .1681 .1685 .1690 .1691: below the target
0.192 and the BERT mini (.1927 at step 1,500), between the bigram +copy (0.1638) and
bidirectional +copy (0.1779) count baselines (`mini`'s docstring); next-sentence loss stays
0.693 (not learned). 162 s of training, 50 s of evals, at load average ~12 (not a speed
figure). As `mobilebert_squad_mini`'s init it did not help: that config's docstring.
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
