"""Mini: a narrow MobileBERT fine-tuned on the SQuAD mini's extractive questions (Shakespeare).

    tpubench run bert --config=mobilebert_squad_mini --workdir=DIR
    tpubench infer bert --config=mobilebert_squad_mini --scenario=SingleStream --mode=accuracy \\
        --params=DIR --workdir=INFER_DIR                     # served as MLPerf Mobile mobilebert

Data, schedule and eval are `squad_mini`'s (this config starts from its `get_config()`, so a
change to that mini's data carries over); only the encoder differs: MobileBERT's architecture
(trigram embedding, bottlenecks, NoNorm, relu, stacked FFNs) at 2 blocks, inter-block width 128
(as the BERT mini's hidden size), bottleneck 32, embedding 32, 2 heads, 2 stacked FFNs of 128,
from random init (no MobileBERT pre-training run exists here). Target and its status: those of
`squad_mini` (70.0, PROVISIONAL: never reached; see that config for the data and baselines).

Measured 2026-12-02 (the squad_mini data as of that day: 12,000 training questions, 1,000 eval
questions of 4 held-out plays, seq 128; `tpubench run` as above), official F1 of the 1,000 eval
questions at steps 250, 500, ..., 1,500:
    seed 0: 47.48 48.18 47.18 47.84 47.80 47.48
    seed 1: 46.92 47.60 47.63 47.59 47.80 47.36
It plateaus by step 250 near F1 47.5: above the BERT mini fine-tuned from pre-training (about
41, squad_mini's docstring) and the first- and last-speaker baselines (46.16, 45.55), below the
most-frequent speaker (50.14) and far below the strongest baseline (speaker of the longest
speech, 68.17): the task does not yet measure the model (squad_mini's open problem).
Served (seed 0's checkpoint, step 1,500): `tpubench infer ... --scenario=SingleStream
--mode=accuracy` F1 47.476666666666674 over the 1,811 windows, equal to the run's last eval
(LoadGen VALID); with `--quantize=int8 --calibration_samples=256` (int8 weights and
activations, max calibration) F1 47.49333 against the float 47.47667 (24 kernels; parameter
bytes 429,456 against 676,872). Cost: 1,500 steps in 277 s (seed 0) and 316 s (seed 1) after
38 s / 10 s of init, at load average 9-13 on the shared 2-core machine (not a speed figure).
"""

from workloads.bert.configs import squad_mini
from workloads.bert.configs._mobilebert import use_mobilebert


def get_config():
    """The MobileBERT SQuAD mini config."""
    c = squad_mini.get_config()
    vocab, positions = int(c.model.vocab_size), int(c.model.max_position_embeddings)
    c = use_mobilebert(c, vocab_size=vocab, hidden_size=128, num_hidden_layers=2,
                       num_attention_heads=2, intermediate_size=128,
                       max_position_embeddings=positions, embedding_size=32,
                       intra_bottleneck_size=32, num_feedforward_networks=2,
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    c.config_name = "mobilebert_squad_mini"
    c.model.init_params = ""  # the BERT mini's pre-training run is not a MobileBERT encoder
    return c
