"""Mini: a small GNMT on Multi30k German -> English (29,000 caption pairs), on CPU.

    python -m workloads.transformer.download_multi30k --data_dir=DIR   # once; CI: ../shared/data
    TPUBENCH_DATA_DIR=DIR tpubench prepare gnmt --config=mini          # once, before runs
    TPUBENCH_DATA_DIR=DIR tpubench run gnmt --config=mini --workdir=/tmp/gnmt_mini

Model: the full config's GNMT-v2 code at hidden 128 (2.51M parameters; 4+4 layers, first
encoder layer bidirectional, residuals from layer 3, normalized Bahdanau attention), the same shared
4,000-piece BPE vocabulary as the Transformer mini (lowercased text), no dropout; label smoothing
0.1, Adam lr 1e-2 (0.9, 0.999), grad clip 5, the reference's schedule shape (50 warmup steps,
4 halvings from 2/3 of 1,000 steps); 64 pairs a step (an epoch: 441 steps). Pairs with more
than 31 ids (+ EOS) on a side are discarded (28,241 of 29,000 kept). Eval: the whole test2016
split (1,000 sentences), beam 5 with the reference's length normalization and coverage penalty,
max 40 tokens, uncased BLEU with the international tokenization (as the full config); every 100
steps from step 300 (none earlier: no seed measured came near the target before 400). Budget:
1,000 steps, no wall-clock limit.

Baselines on the same split and metric (`python benchmarks/baselines_transformer.py
--data_dir=DIR`, the Transformer mini's, same data): copy the German source 0.90 BLEU; word-by-word
most-associated English word 22.24; nearest-neighbour retrieval 12.22. Target 0.25: 2.76 BLEU
above the strongest baseline (the Transformer mini's target).

Measured (this config; CPU, 2 cores shared with other jobs; steps and BLEU are deterministic on
CPU, times are not quoted), BLEU on all 1,000 sentences:
- seed 0 (a run of this config with target 0.99 and evals every 100 steps from 100): 6.52 at
  step 100, 10.91 at 200, 19.06 at 300, 24.04 at 400, 27.70 at 500: target reached at step 500.
- seed 1 (this config with run.seed=1): 18.20 at step 300, 23.90 at 400, 26.90 at 500:
  target reached at step 500; its MLPerf log passes the official checker (`tpubench check`).
tests/test_gnmt_mini.py asserts the step to target (500, or one eval point earlier; budget 500)
for seed 0 (seed 1: `--extended`); its run passed in 1,153 s on the shared CPU (load ~12).

What changed to get here (seed 0): lr 1e-2 instead of 3e-3, and runs long enough. This config
at lr 3e-3 (the test's run with that one change): 13.32 at step 300, 17.97 at 400, 23.24 at
500, 25.13 at 600 (the target 100 steps later). The first session's runs at 3e-3 with the
reference init reached 5.13 BLEU at step 600; a probe of this init 6.41 at step 150
(benchmarks/gnmt_probe.py). Not measured: hidden 256, fewer layers, larger
batches, a shorter max length at lr 1e-2 (two variants at the reference init, hidden 256 and 2
layers, were no better per pair seen: lr 3e-3, batch 64, 3.13 BLEU at step 300; lr 5e-3, batch
256, 2.21 at step 150).

Initialization (the one departure from the full config's model, besides its size): LSTM,
embedding and classifier weights U(+-0.3) instead of the reference's U(+-0.1), and the
attention's scalar g starting at 1.0 instead of 1/sqrt(hidden). Why (`benchmarks/gnmt_probe.py`,
seed 0, lr 3e-3 unless said):
- Overfitting the first 128 training pairs: at the reference's init, loss per token 5.27 at
  step 75; U(+-0.3): 3.28. U(+-0.1) suits width 1024: a gate pre-activation's scale is
  std(U(+-0.1)) * sqrt(fan-in) = 1.85x its input's at 1024, 0.65x at 128 (computed).
- The normalized attention's scores are bounded by g * sqrt(hidden) = 1 at the reference's g,
  so attention starts uniform and Adam moves g by at most about lr a step: from 0.088 it reached
  0.12-0.16 after 150 steps, the mean largest attention weight staying 0.07-0.19; with g = 1.0
  it was 0.58 at step 75.
- Real data, BLEU on the first 500 test sentences at step 150: reference init 2.12 (all 1,000),
  U(+-0.3) 6.00, U(+-0.3) with g = 1.0 6.41, the same at lr 1e-2 7.50 (2+2 layers: 6.56).

Cost of a step (computed from the shapes, forward matmuls per position, i.e. one source and
one target token): the LSTMs 2.9 MFLOP, the 4,000-way classifier 1.0 MFLOP, the attention under
0.1 MFLOP; the 29,000 pairs' sources and targets average 16.9 and 16.2 ids (EOS included) in
the 31-wide rows, so about 45% of the work is padding (not removed: the harness compiles one
static shape). An eval (beam 5, 1,000 sentences) cost about as much as 25 train steps (38-42 s
against 1.6 s a step, seed 0's run on the loaded machine: a ratio, not a speed).
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
