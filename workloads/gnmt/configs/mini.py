"""Mini: a small GNMT on Multi30k German -> English (29,000 caption pairs), on CPU.

    python -m workloads.transformer.download_multi30k --data_dir=DIR   # once; CI: ../shared/data
    TPUBENCH_DATA_DIR=DIR tpubench prepare gnmt --config=mini          # once, before runs
    TPUBENCH_DATA_DIR=DIR tpubench run gnmt --config=mini --workdir=/tmp/gnmt_mini

Model: the full config's GNMT-v2 code at hidden 128 (2.51M parameters; 4+4 layers, first
encoder layer bidirectional, residuals from layer 3, normalized Bahdanau attention), the
Transformer mini's shared 4,000-piece BPE vocabulary (lowercased text), no dropout; label
smoothing 0.1, Adam lr 1e-2, grad clip 5, the reference's schedule shape (50 warmup steps, 4
halvings from 2/3 of 1,000 steps); 64 pairs a step (an epoch: 441 steps). Eval: the whole
test2016 split (1,000 sentences), beam 5 with the reference's length normalization and coverage
penalty, uncased intl BLEU; every 100 steps from step 300. Budget: 1,000 steps.
One departure from the full model besides its size: LSTM, embedding and classifier weights
U(+-0.3) instead of U(+-0.1), and the attention's scalar g starting at 1.0 (the README says why).

Baselines (`python baselines/transformer.py --data_dir=DIR`): copy the German source
0.90 BLEU; word-by-word dictionary 22.24; nearest-neighbour retrieval 12.22. Target 0.25: 2.76
BLEU above the strongest baseline.

Measured (CPU, 2 cores shared with other jobs; steps and BLEU repeat on one machine;
another CPU's rounding may move them):
- seed 0: 6.52 at step 100, 10.91 at 200, 19.06 at 300, 24.04 at 400, 27.70 at 500: target
  reached at step 500.
- seed 1: 18.20 at step 300, 23.90 at 400, 26.90 at 500: target reached at step 500; its MLPerf
  log passes the official checker (`tpubench check`).
These runs predate 2026-12-05, when the schedule moved to the reference's count (update k at
the scheduler's last_epoch k: the warmup one step further along); not re-measured since.
tests/test_gnmt_mini.py asserts the step to target for seed 0 (seed 1: `--extended`); its run
passed in 1,153 s on the shared CPU (load ~12). History and the step cost: workloads/gnmt/README.md.
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
    # The reference's init at its width 1024 (U(+-0.1), attention g = 1/sqrt(1024)) starves a
    # width-128 model: see the docstring's probes.
    c.model.init_weight = 0.3
    c.model.attention_scale = 1.0
    c.model.dtype = "float32"
    c.data.max_len = 32
    c.eval.max_decode_len = 40
    c.data.global_batch_size = 64
    c.eval.batch_size = 500
    c.optimizer.learning_rate = 1.0e-2  # 3e-3: the target 100 steps later (docstring)
    c.schedule.warmup_steps = 50
    c.schedule.train_steps = 1000
    c.eval.target_value = 0.25  # strongest simple baseline 0.2224 (word-by-word); see docstring
    c.eval.every_samples = 64 * 100
    c.eval.offset_samples = 64 * 200  # first eval at step 300
    c.run.steps_per_dispatch = 25
    c.run.max_train_samples = 64 * 1000  # step budget (no wall-clock budget)
    c.run.max_time_s = 0.0
    return c
