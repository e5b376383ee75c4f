"""Smoke: a tiny Transformer for one-step tests of every data source (synthetic by default).

    python -m workloads.transformer.main --config=workloads/transformer/configs/smoke.py \\
        --workdir=/tmp/transformer_smoke [--config.data.source=multi30k|tfds]

Measured: one train block and one beam-search eval on synthetic data in tests/test_transformer.py
(a few seconds on 2 CPU cores, most of it compilation); it is not meant to reach its target.
"""

import ml_collections

from workloads.transformer.configs import full


def get_config() -> ml_collections.ConfigDict:
    """Tiny shapes, the full config's logged hyperparameters otherwise."""
    c = full.get_config()
    c.is_mlperf = False
    c.submission.division = "open"
    c.data.dataset = "synthetic"
    c.data.source = "synthetic"
    c.data.source_lang = "de"
    c.data.target_lang = "en"
    c.data.tokenizer = "sentencepiece"
    c.model.vocab_size = 256  # BPE needs one piece per character of the corpus (Multi30k: 79)
    c.model.num_classes = c.model.vocab_size
    c.data.tokenizer_max_chars = 10**5
    c.model.emb_dim = 16
    c.model.num_heads = 2
    c.model.num_layers = 1
    c.model.mlp_dim = 32
    c.model.dtype = "float32"
    c.data.max_len = 32
    c.data.max_eval_input_len = 0  # the longest prepared eval source (synthetic: max_len)
    c.eval.max_decode_len = 8
    c.data.global_batch_size = 4
    c.eval.batch_size = 4
    c.data.train_samples = 8
    c.eval.samples = 4
    c.eval.beam_size = 2
    c.eval.every_samples = 4
    c.run.steps_per_dispatch = 1
    c.run.max_train_samples = 4
    c.schedule.warmup_steps = 10
    return c
