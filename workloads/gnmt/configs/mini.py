"""Mini: a small GNMT on Multi30k German -> English (29,000 caption pairs), on CPU.

    python -m workloads.transformer.download_multi30k --data_dir=DIR   # once; CI: ../shared/data
    TPUBENCH_DATA_DIR=DIR tpubench prepare gnmt --config=mini          # once, before runs
    TPUBENCH_DATA_DIR=DIR tpubench run gnmt --config=mini --workdir=/tmp/gnmt_mini

Model: the full config's GNMT-v2 code at hidden 128 (2.51M parameters; 4+4 layers, first
encoder layer bidirectional, residuals from layer 3, normalized Bahdanau attention), the same shared
4,000-piece BPE vocabulary as the Transformer mini (lowercased text), no dropout; label smoothing
0.1, Adam, grad clip 5 and the reference's warmup/step-decay schedule shape over the step budget.
Pairs with more than 31 ids (+ EOS) on a side are discarded. Eval: the whole test2016 split
(1,000 sentences), beam 5 with the reference's length normalization and coverage penalty, max 40
tokens, uncased BLEU with the international tokenization (as the full config).

Baselines on the same split and metric (`python benchmarks/baselines_transformer.py
--data_dir=DIR`, the Transformer mini's, same data): copy the German source 0.90 BLEU; word-by-word
most-associated English word 22.25; nearest-neighbour retrieval 12.22.

Initialization (the one departure from the full config's model, besides its size): LSTM,
embedding and classifier weights U(+-0.3) instead of the reference's U(+-0.1), and the
attention's scalar g starting at 1.0 instead of 1/sqrt(hidden). Why (measured with
`benchmarks/gnmt_probe.py`, seed 0, on the shared, heavily loaded 2-core CPU; BLEU on the
first 500 test2016 sentences unless said):
- Overfitting probe (the first 128 training pairs, lr 3e-3 constant after warmup): at the
  reference's init, loss per token 5.27 and token accuracy 0.21 at step 75 (a run whose
  schedule decayed from step 200: still 2.87 and 0.57 at step 300, far from memorized);
  U(+-0.3): 3.28 and 0.48 at step 75. U(+-0.1) suits width 1024: a gate pre-activation's
  scale is std(U(+-0.1)) * sqrt(fan-in) = 1.85x its input's at 1024, 0.65x at 128 (computed).
- The normalized attention's scores are bounded by g * sqrt(hidden) = 1 at the reference's g
  (for any width), so attention starts uniform, and Adam moves the scalar g by at most about
  lr a step: from 0.088 it reached only 0.12 (U(+-0.1)) and 0.16 (U(+-0.3)) after 150 steps,
  and the mean largest attention weight stayed 0.07-0.19 (uniform over a ~15-token source:
  ~0.07). With g = 1.0 it was 0.58 at step 75 and 0.41 at step 150.
- Real data, 150 steps (the same 64-pair batches), loss per token at step 75 / 150 and BLEU
  at step 150: reference init (the first session's run, all 1,000 sentences): 5.38 at 150,
  BLEU 2.12; U(+-0.3), reference g: 5.44 / 4.69, BLEU 6.00; U(+-0.3), g = 1.0: 5.38 / 4.65,
  BLEU 6.41; U(+-0.1), g = 1.0: 5.78 at 75 (stopped). With this init and lr 1e-2 (not yet
  this config's): 5.03 / 4.28, BLEU 7.50; the same with 2+2 layers (1.85M parameters): 5.19 /
  4.38, BLEU 6.56. tests/test_gnmt_mini.py (slow) asserts the step-75 loss of this config.
No tokenization, teacher-forcing or masking bug was found (tests/test_gnmt.py checks the
maths against the reference's; outputs at step 150 are fluent but source-independent, "a man
is sitting on the street.", as expected of a model still learning to attend).

NOT FINISHED: the target is not chosen by measurement. `eval.target_value = 0.25` only sits
above the strongest baseline (22.25); no run has reached it, and no run of this config went
past step 150 (each probe step took ~9 s on the loaded machine). Next: lr 1e-2 with this init
over several epochs (441 steps each), then two seeds to a target. Earlier measurements, at the
reference init and hidden 128, seed 0, all 1,000 sentences: BLEU 2.12 at step 150, 3.71 at
300, 4.47 at 450, 5.13 at 600 (that run's MLPerf log fails the official checker 0.7.0 only on
the quality threshold); and two variants, both no better per pair seen: hidden 256, 2 layers,
batch 64, lr 3e-3: 2.38 / 2.84 / 3.13 at steps 100 / 200 / 300; hidden 256, 2 layers, batch
256, lr 5e-3: 0.02 / 0.65 / 2.21 at steps 50 / 100 / 150.
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
    c.optimizer.learning_rate = 3.0e-3
    c.schedule.warmup_steps = 50
    c.schedule.train_steps = 600
    c.eval.target_value = 0.25  # placeholder above the baselines: not yet reached (docstring)
    c.eval.every_samples = 64 * 150
    c.run.steps_per_dispatch = 25
    c.run.max_train_samples = 64 * 600
    c.run.max_time_s = 0.0
    return c
