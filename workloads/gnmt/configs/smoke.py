"""Smoke: a tiny GNMT for one-step tests of every data source (synthetic by default).

    tpubench run gnmt --config=smoke [--config.data.source=multi30k]

Measured: one train dispatch and one beam-search eval on synthetic data in tests/test_gnmt.py
(seconds on 2 CPU cores, most of it compilation); it is not meant to reach its target.
"""

import ml_collections

from workloads.gnmt.configs import full


def get_config() -> ml_collections.ConfigDict:
    """Tiny shapes, the full config's logged hyperparameters otherwise."""
    c = full.get_config()
    c.is_mlperf = False
    c.submission.division = "open"
    c.data.dataset = "synthetic"
    c.data.source = "synthetic"
    c.data.source_lang = "de"
    c.data.target_lang = "en"
    c.data.eval_split = "test"
    c.data.lowercase = True
    c.data.tokenizer = "sentencepiece"
    c.data.tokenizer_max_chars = 10**5
    c.model.vocab_size = 256
    c.model.num_classes = c.model.vocab_size
    c.model.hidden_size = 16
    c.model.dtype = "float32"
    c.data.max_len = 16
    c.eval.max_decode_len = 6
    c.data.global_batch_size = 4
    c.eval.batch_size = 4
    c.data.train_samples = 8
    c.eval.samples = 4
    c.eval.beam_size = 2
    c.eval.every_samples = 4
    c.schedule.train_steps = 10
    c.run.steps_per_dispatch = 1
    c.run.max_train_samples = 4
    return c
