"""Mini (bert-99): the BERT mini fine-tuned on cross-lingual extractive questions from Multi30k.

    tpubench run bert --config=mini --workdir=PRE                      # pre-train (the BERT mini)
    tpubench run bert --config=squad_mini_multi30k --config.model.init_params=PRE --workdir=DIR
    tpubench infer bert --config=squad_mini_multi30k --scenario=Offline --mode=accuracy \
        --params=DIR --workdir=INFER_DIR                               # served as bert-99

Needs Multi30k (`python -m workloads.transformer.download_multi30k --data_dir=DIR`, then
`TPUBENCH_DATA_DIR=DIR`) and PRE, a `bert --config=mini` run.
Data (`workloads/bert/multi30k_qa.py`): the context is 4 English Multi30k captions, the question
the German translation of one of them, the answer that English caption. Train: 29,000 questions
(seed 0); eval: the 1,000 test_2016_flickr sentences (seed 1). Seq 128, one window per
question; vocabulary 4,096 (the BERT mini's 1,024 words + 3,072 commonest EN + DE tokens).
Schedule: lr 1e-3, warmup 400, linear decay to the floor 3e-4 at step 4,000
(`schedule.end_learning_rate`), the floor held to step 7,000 (`run.max_train_samples`).

Baselines (`python baselines/bert.py multi30k_qa`, official v1.1 F1): first caption
29.28, last 31.62, longest 31.57, shortest 29.01, length match 59.24, word overlap 51.17,
length + char 3-grams 72.80, char 3-gram overlap 83.47 (the strongest rule); a word lexicon
learned from the 29,000 training pairs (Dice) then word overlap 97.96.
Target 85.0 (above the 3-gram rule by 1.5 F1, 1.4 binomial standard errors).

Measured 2026-12-03 (harness runs, PRE = a seed-0 `bert --config=mini` run stopped at its
target at step 1,500; F1 at steps 500, 1,000, ..., 6,000; shared 2-core machine):
  seed 1: 47.63 52.38 56.18 58.10 61.01 57.75 63.33 75.10 80.27 84.26 84.88 85.79
  seed 0: 46.23 51.21 52.52 56.13 71.42 78.52 78.67 79.53 84.23 88.42 89.73 88.92
  seed 2: 48.59 51.34 52.45 69.62 82.23 85.35 87.08 88.36 91.23 90.31 90.87 90.58
Seeds 0, 1, 2 reach 85.0 at steps 5,000, 6,000, 3,000 (tests/test_multi30k_qa.py). Seed 1's
margin is thin: 85.79 at step 6,000, then 85.60 86.45 87.64 86.00 at steps 6,500-8,000.
Cost: a 4,000-step run took 1,457 s from run start to the last eval at load average 5-14 (not
a quiet-machine figure), after ~3 minutes of question conversion, init and compile.
Served: `tpubench infer --mode=accuracy` reproduces the training eval's F1 exactly.
Earlier schedules (decay to zero, lr 2e-3, longer runs) and why seed 1 failed:
workloads/bert/README.md.
"""

from workloads.bert.configs import squad_mini

STEPS = 7000  # the run: the decay to the floor over DECAY_STEPS, then the floor held
DECAY_STEPS = 4000
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
    c.schedule.warmup_steps = DECAY_STEPS // 10
    c.schedule.train_steps = DECAY_STEPS  # the rate reaches end_learning_rate here, then stays
    c.schedule.end_learning_rate = 3e-4
    # Above every rule baseline (83.47); seeds 0, 1, 2: steps 5,000, 6,000, 3,000.
    c.eval.target_value = 85.0
    c.eval.target_provisional = False
    return c
