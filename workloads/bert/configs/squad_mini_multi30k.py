"""Mini: the BERT mini fine-tuned on cross-lingual extractive questions built from Multi30k.

    tpubench run bert --config=mini --workdir=PRE                      # pre-train (the BERT mini)
    tpubench run bert --config=squad_mini_multi30k --config.model.init_params=PRE --workdir=DIR
    tpubench infer bert --config=squad_mini_multi30k --scenario=Offline --mode=accuracy \\
        --params=DIR --workdir=INFER_DIR                               # served as bert-99

Data (`workloads/bert/multi30k_qa.py`): the context is 4 English Multi30k captions, the question
the German translation of one of them, the answer that English caption (the whole sentence).
Train: 29,000 questions, each training sentence asked once (seed 0); eval: the 1,000
test_2016_flickr sentences, each asked once (seed 1). Seq 128 (contexts 51 tokens median, 89
at most; questions <= 40 tokens), so one window per question; vocabulary 4,096: the BERT
mini's 1,024 words (same ids) and the 3,072 commonest lower-cased EN + DE training tokens it
lacks (6.0% of the eval tokens are [UNK], counted on 300 questions).
`model.init_params` = the pre-training run's workdir (`workloads/bert/pretrained.py`).

Baselines (`python benchmarks/baselines_multi30k_qa.py`, the 1,000 eval questions, official
v1.1 F1): first caption 29.28, last 31.62, longest 31.57, shortest 29.01, length match (German
length / the training median ratio) 59.24, word overlap 51.17, length + char 3-grams 72.80,
char 3-gram overlap 83.47 (the strongest rule: cognates and names, Mann/man, Gitarre/guitar).
Not trivial, and far above: a word lexicon learned from the 29,000 training pairs (Dice) then
word overlap, 97.96: the task is solvable by learning which German word goes with which
English one, which is what the model must do from the same pairs. With 8 captions a context
(--captions=8) the rules fall to 18.24-74.48 (3-grams the strongest), the lexicon to 97.31.
Measured 2026-12-02d (PRE = /tmp/qa_pre0, a `bert --config=mini` run, seed 0, stopped at its
target at step 1,500, MLM accuracy 0.1927), official F1 of the 1,000 eval questions, seed 0:
  lr 5e-4, 1,500 steps, eval every 250:   43.44 48.11 49.42 50.02 51.13 51.94
  lr 1e-3, 3,000 steps, eval every 500:   46.68 49.23 65.34 74.19 80.63 82.67
  this config (lr 1e-3, 4,000 steps):     46.61 49.92 63.03 72.25 80.48 83.40 85.94 85.73
(the first two: this config with --config.optimizer.learning_rate, schedule.train_steps,
schedule.warmup_steps = 10%, run.max_train_samples and eval.every_samples overridden).
The F1 sits near 50 for ~1,000 steps, then climbs (the lexicon being learned) while the rate
decays; at 4,000 steps it levels off near 85.8, above the strongest rule (3-gram overlap
83.47) but below the learned lexicon (97.96). Target 85.0 (chosen from this curve: above 83.47
by 1.5 F1, about 1.3 binomial standard errors at F1 ~84 on 1,000 questions; below the
plateau), reached at step 3,500 by seed 0. PROVISIONAL: seed 1 not measured yet (session
2026-12-02d ran out of time), nor random init for comparison.
Served: `tpubench infer --mode=accuracy` reproduces the training eval's F1 exactly
(tests/test_multi30k_qa.py, on a cut-down run).
Cost: the 4,000-step run took 1,457 s from run start to the last eval (train 1,371 s, evals
86 s; load average 5-14 on the shared 2-core machine, not a quiet-machine figure), after ~3
minutes from process start (the conversion of the 29,000 questions, init 35 s, compile).
"""

from workloads.bert.configs import squad_mini

STEPS = 4000
BATCH = 32


def get_config():
    """The cross-lingual Multi30k SQuAD mini config."""
    c = squad_mini.get_config()
    c.config_name = "squad_mini_multi30k"
    c.data.source = "multi30k_qa"
    c.data.dataset = "multi30k-qa"
    del c.data["quote_in_context"]
    c.model.vocab_size = 4096
    c.data.captions = 4
    c.data.train_questions = 29_000
    c.data.eval_questions = 1000
    c.data.max_seq_length = 128
    c.data.max_query_length = 40
    c.data.doc_stride = 64
    c.eval.max_answer_length = 40
    c.data.global_batch_size = BATCH
    c.eval.every_samples = 500 * BATCH
    c.run.max_train_samples = STEPS * BATCH
    c.optimizer.learning_rate = 1e-3
    c.schedule.warmup_steps = STEPS // 10
    c.schedule.train_steps = STEPS
    c.eval.target_value = 85.0  # above every rule baseline (83.47); reached at step 3,500
    c.eval.target_provisional = True  # seed 0 only; seed 1 not measured yet
    return c
