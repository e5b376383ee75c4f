"""Smoke: a tiny Transformer for one-step tests of every data source (synthetic by default).

    python -m workloads.transformer.main --config=workloads/transformer/configs/smoke.py \\
        --workdir=/tmp/transformer_smoke [--config.data_source=multi30k|tfds]

Measured: one train block and one beam-search eval on synthetic data in tests/test_transformer.py
(a few seconds on 2 CPU cores, most of it compilation); it is not meant to reach its target.
"""

import ml_collections

from workloads.transformer.configs import full


def get_config() -> ml_collections.ConfigDict:
    """Tiny shapes, the full config's logged hyperparameters otherwise."""
    c = full.get_config()
    c.is_mlperf = False
    c.submission_division = "open"
    c.dataset = "synthetic"
    c.data_source = "synthetic"
    c.source_lang = "de"
    c.target_lang = "en"
    c.tokenizer = "sentencepiece"
    c.vocab_size = 256  # BPE needs one piece per character of the corpus (Multi30k: 79)
    c.num_classes = c.vocab_size
    c.tokenizer_max_chars = 10**5
    c.emb_dim = 16
    c.num_heads = 2
    c.num_layers = 1
    c.mlp_dim = 32
    c.dtype = "float32"
    c.max_len = 32
    c.max_eval_input_len = 0  # the longest prepared eval source (synthetic: max_len)
    c.max_decode_len = 8
    c.global_batch_size = 4
    c.eval_batch_size = 4
    c.train_samples = 8
    c.eval_samples = 4
    c.beam_size = 2
    c.eval_every_samples = 4
    c.steps_per_dispatch = 1
    c.max_train_samples = 4
    c.warmup_steps = 10
    return c
