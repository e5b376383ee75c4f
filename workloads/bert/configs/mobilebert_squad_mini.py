"""Mini: a narrow MobileBERT fine-tuned on the cross-lingual Multi30k extractive questions.

    tpubench run bert --config=mobilebert_squad_mini --workdir=DIR
    tpubench infer bert --config=mobilebert_squad_mini --scenario=SingleStream --mode=accuracy \\
        --params=DIR --workdir=INFER_DIR                     # served as MLPerf Mobile mobilebert

Data, schedule and eval are `squad_mini_multi30k`'s (this config starts from its
`get_config()`, so a change to that mini's data carries over; see it for the data and the
baselines); only the encoder differs: MobileBERT's architecture (trigram embedding,
bottlenecks, NoNorm, relu, stacked FFNs) at 2 blocks, inter-block width 128 (as the BERT
mini's hidden size), bottleneck 32, embedding 32, 2 heads, 2 stacked FFNs of 128, from random
init (no MobileBERT pre-training run exists here).

MEASUREMENTS PENDING (session 2026-12-02e).
"""

from workloads.bert.configs import squad_mini_multi30k
from workloads.bert.configs._mobilebert import MINI_SIZES, use_mobilebert


def get_config():
    """The MobileBERT SQuAD mini config."""
    c = squad_mini_multi30k.get_config()
    vocab, positions = int(c.model.vocab_size), int(c.model.max_position_embeddings)
    c = use_mobilebert(c, vocab_size=vocab, max_position_embeddings=positions, **MINI_SIZES)
    c.config_name = "mobilebert_squad_mini"
    c.model.init_params = ""  # the BERT mini's pre-training run is not a MobileBERT encoder
    return c
