"""Mini: a small Transformer on Multi30k German -> English (29,000 caption pairs), on CPU.

    python -m workloads.transformer.download_multi30k --data_dir=DIR   # once; CI: ../shared/data
    TPUBENCH_DATA_DIR=DIR python -m workloads.transformer.main \\
        --config=workloads/transformer/configs/mini.py --workdir=/tmp/transformer_mini

Model: 2+2 layers, d 128, 4 heads, FF 512, shared 4,000-piece BPE vocabulary (1.44M params),
no dropout; 64 packed rows of 64 tokens per step, Adam (0.9, 0.997, 1e-9), rsqrt schedule with
200 warmup steps. Eval: the whole test2016 split (1,000 sentences), beam 4 (alpha 0.6) on
device, max 40 tokens, uncased sacreBLEU; every 90 steps.

Measured (2 CPU cores shared with other jobs, load average 4.0-6.4, median 4.8; tokenizer
already cached): test2016 BLEU 9.5 at step 90, 20.8 at step 180 (1.27 epochs) -> target 0.20
reached, time_to_target_s 228 (train 178 s, 2 evals 49 s), init (compile) 13 s. The training
trajectory is deterministic: an earlier run of the same steps under heavier load (median 7.0)
logged the same 0.2080 at step 180 after 269 s. A cold tokenizer cache adds ~2-3 s. The MLPerf
log passes every check but the ruleset's WMT threshold (BLEU >= 0.25).
Re-measured on a quiet machine (same 2 cores, nothing else running): the same 0.2080 at step 180,
time_to_target_s 94.4, init 5.8 s.
"""

import ml_collections

from workloads.transformer.configs import full


def get_config() -> ml_collections.ConfigDict:
    """Small Transformer, Multi30k de->en, BLEU target sized from a measured run."""
    c = full.get_config()
    c.is_mlperf = False
    c.submission_division = "open"
    c.dataset = "multi30k_de_en"
    c.data_source = "multi30k"
    c.source_lang = "de"
    c.target_lang = "en"
    c.eval_split = "test"
    c.lowercase = True  # the metric is uncased
    c.tokenizer = "sentencepiece"
    c.vocab_size = 4000
    c.num_classes = c.vocab_size
    c.emb_dim = 128
    c.num_heads = 4
    c.num_layers = 2
    c.mlp_dim = 512
    c.dropout_rate = 0.0
    c.attention_dropout_rate = 0.0
    c.dtype = "float32"
    c.max_len = 64
    c.max_eval_input_len = 0  # the longest test2016 source
    c.max_decode_len = 40
    c.global_batch_size = 64
    c.eval_batch_size = 500
    c.learning_rate = 2.0
    c.warmup_steps = 200
    c.target_value = 0.20
    c.eval_every_samples = 64 * 90
    c.steps_per_dispatch = 20
    c.max_train_samples = 64 * 2000
    c.max_time_s = 600.0
    return c
