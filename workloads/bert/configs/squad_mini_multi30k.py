"""Mini: the BERT mini fine-tuned on cross-lingual extractive questions built from Multi30k.

    tpubench run bert --config=mini --workdir=PRE                      # pre-train (the BERT mini)
    tpubench run bert --config=squad_mini_multi30k --config.model.init_params=PRE --workdir=DIR
    tpubench infer bert --config=squad_mini_multi30k --scenario=Offline --mode=accuracy \\
        --params=DIR --workdir=INFER_DIR                               # served as bert-99

Data (`workloads/bert/multi30k_qa.py`): the context is 4 English Multi30k captions, the question
the German translation of one of them, the answer that English caption. PROVISIONAL: being
measured (session 2026-12-02d).
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
    c.eval.target_value = 90.0
    c.eval.target_provisional = True
    return c
