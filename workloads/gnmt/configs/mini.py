"""Mini: a small GNMT on Multi30k German -> English (29,000 caption pairs), on CPU.

    python -m workloads.transformer.download_multi30k --data_dir=DIR   # once; CI: ../shared/data
    TPUBENCH_DATA_DIR=DIR tpubench prepare gnmt --config=mini          # once, before runs
    TPUBENCH_DATA_DIR=DIR tpubench run gnmt --config=mini --workdir=/tmp/gnmt_mini

Model: the full config's GNMT-v2 code at hidden 256 (4+4 layers, first encoder layer
bidirectional, residuals from layer 3, normalized Bahdanau attention), the same shared
4,000-piece BPE vocabulary as the Transformer mini (lowercased text), no dropout; label smoothing
0.1, Adam, grad clip 5 and the reference's warmup/step-decay schedule shape over the step budget.
Pairs with more than 31 ids (+ EOS) on a side are discarded. Eval: the whole test2016 split
(1,000 sentences), beam 5 with the reference's length normalization and coverage penalty, max 40
tokens, uncased BLEU with the international tokenization (as the full config).

Baselines on the same split and metric (`python benchmarks/baselines_transformer.py
--data_dir=DIR`, the Transformer mini's, same data): copy the German source 0.90 BLEU; word-by-word
most-associated English word 22.25; nearest-neighbour retrieval 12.22.

NOT FINISHED: the target is not yet chosen by measurement. `eval.target_value = 0.25` only sits
above the strongest baseline (22.25); no run has reached it. Measured (seed 0, this config with
--config.eval.target_value=0.99 on the shared 2-core CPU; BLEU is deterministic on CPU, times are
not quoted): BLEU 2.12 at step 150, 3.71 at step 300, 4.47 at step 450, 5.13 at step 600
(train loss per token 5.38 -> 4.72 from step 150 to 300): far below the baselines after 1.36
epochs (441 steps an epoch). That run's MLPerf log fails the official checker (0.7.0) only on
the quality threshold. The
model learns much more slowly than the Transformer mini (21.60 at step 180), so the mini needs
more steps (several epochs), a larger learning rate or a shallower/wider model before a target
can be set; see the report of the session that added it.

Second session's variants (seed 0, `tpubench run gnmt --config=mini
--config.eval.target_value=0.99` plus the overrides named; same caveats):
- hidden 256, num_layers 2, batch 64, lr 3e-3, warmup 50, train_steps 1000 (no decay inside the
  run): BLEU 2.38 at step 100, 2.84 at 200, 3.13 at 300 (train loss per token 5.88, 5.20, 4.88):
  no better per step than this config (3.71 at step 300), so this config stays.
- hidden 256, num_layers 2, batch 256, lr 5e-3, warmup 30, train_steps 1000: BLEU 0.02 at
  step 50, 0.65 at 100, 2.21 at 150 (38,400 pairs seen; loss per token 6.12, 5.63, 5.16): worse
  per pair seen than this config (5.13 after the same 38,400 pairs, step 600).
Neither approaches the word-by-word baseline (22.25); reaching it needs several epochs of
training (tens of minutes on 2 shared cores at these sizes), which no session has measured yet.
"""

import ml_collections

from workloads.gnmt.configs import full


def get_config() -> ml_collections.ConfigDict:
    """Small GNMT, Multi30k de->en."""
    c = full.get_config()
    c.is_mlperf = False
    c.submission.division = "open"
    c.data.dataset = "multi30k_de_en"
    c.data.source = "multi30k"
    c.data.source_lang = "de"
    c.data.target_lang = "en"
    c.data.eval_split = "test"
    c.data.lowercase = True  # the metric is uncased
    c.data.tokenizer = "sentencepiece"
    c.model.vocab_size = 4000
    c.model.num_classes = c.model.vocab_size
    c.model.hidden_size = 128
    c.model.dropout_rate = 0.0
    c.model.dtype = "float32"
    c.data.max_len = 32
    c.eval.max_decode_len = 40
    c.data.global_batch_size = 64
    c.eval.batch_size = 500
    c.optimizer.learning_rate = 3.0e-3
    c.schedule.warmup_steps = 50
    c.schedule.train_steps = 600
    c.eval.target_value = 0.25  # placeholder above the baselines: not yet reached (docstring)
    c.eval.every_samples = 64 * 150
    c.run.steps_per_dispatch = 25
    c.run.max_train_samples = 64 * 600
    c.run.max_time_s = 0.0
    return c
