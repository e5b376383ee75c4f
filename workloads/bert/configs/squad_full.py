"""BERT-large fine-tuned on SQuAD v1.1: produces the model MLPerf Inference v0.7 bert-99 serves.

    tpubench run bert --config=squad_full --config.data.dir=DIR
        # DIR: train-v1.1.json, dev-v1.1.json, vocab.txt, bs64k_32k_ckpt/model.ckpt-28252.*
    tpubench infer bert --config=squad_full --scenario=Offline --mode=accuracy --params=RUN_DIR

Not an MLPerf Training benchmark (SQuAD fine-tuning is how the inference benchmark's model is
made): Google's `run_squad.py` recipe for BERT-large (README: train_batch_size 24,
learning_rate 3e-5, num_train_epochs 2.0, max_seq_length 384, doc_stride 128; its flags:
warmup_proportion 0.1, AdamWeightDecayOptimizer), from the MLPerf pre-training checkpoint
(encoder; the span head starts random). Steps as run_squad.py counts them, from QUESTIONS:
int(87,599 / 24 * 2.0) = 7,299, warmup int(7,299 * 0.1) = 729 (87,599: the questions of
train-v1.1.json; an epoch of the harness is the run's own feature count, `train_samples`).
Target: official F1 >= 89.96526 on dev-v1.1 (10,570 questions), the bert-99 threshold (99% of
the reference's 90.874).
Measured: not run (no SQuAD data and no accelerator here).
"""

from workloads.bert.configs._squad import squad_base_config


def get_config():
    """The SQuAD fine-tuning config."""
    c = squad_base_config()
    c.config_name = "squad_full"
    c.data.source = "json"
    c.model.init_checkpoint = "bs64k_32k_ckpt/model.ckpt-28252"
    c.model.dtype = "bfloat16"
    c.data.global_batch_size = 24
    c.data.train_samples = 87_599  # used only by data.source=synthetic; real data count it
    c.schedule.train_steps = 7_299
    c.schedule.warmup_steps = 729  # int(10% of the steps)
    c.run.max_train_samples = 7_299 * 24
    c.eval.batch_size = 128
    c.eval.samples = 10_833  # used only by data.source=synthetic; real data count it
    c.eval.every_samples = 0  # once per epoch (of the counted features)
    c.run.steps_per_dispatch = 1
    return c
