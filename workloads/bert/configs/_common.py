"""The BERT keys every BERT config sets (the harness's `base_config()` plus the workload's own)."""

from __future__ import annotations

import ml_collections

from tpubench.config import base_config


def bert_base_config() -> ml_collections.ConfigDict:
    """`base_config()` + BERT-large sizes, the data layout and the LAMB schedule keys."""
    c = base_config()
    c.workload = "bert"
    c.eval.target_metric = "masked_lm_accuracy"

    # Model: the fields of a TF bert_config.json (BERT-large defaults).
    c.model.update(dict(
        vocab_size=30522, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=4096, max_position_embeddings=512, type_vocab_size=2,
        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, initializer_range=0.02,
        layer_norm_eps=1e-12,
    ))
    c.data.max_seq_length = 512
    c.data.max_predictions_per_seq = 76
    # Share of the words masked (create_pretraining_data.py --masked_lm_prob); the Shakespeare
    # data masks with it, TFRecords come masked already.
    c.data.masked_lm_prob = 0.15
    # Share of the masked words shown as [MASK] (BERT: 0.8; the rest: unchanged / random, evenly).
    c.data.mask_token_share = 0.8

    # Start checkpoint (TF): prefix relative to data_dir unless absolute; "" = from scratch.
    c.model.init_checkpoint = ""
    c.model.bert_config_file = ""  # "" = bert_config.json beside the checkpoint

    # MLPerf TFRecords (data_source="tfrecord"), relative to data_dir.
    c.data.train_file_pattern = "part-*"
    c.data.eval_file_pattern = "eval_10k*"
    c.data.shuffle_buffer_size = 10_000
    # Packed training records (workloads/bert/packing.py, an option; the v0.7 JAX record did not
    # pack): up to max_per_row examples per row of max_seq_length tokens.
    c.data.packed = False
    c.data.max_per_row = 3

    # LAMB and the reference's warmup + polynomial-decay schedule. `optimizer="adamw"` (the mini)
    # uses the same betas, epsilon, weight decay and schedule with AdamW.
    c.optimizer.name = "lamb"
    c.optimizer.learning_rate = 1e-3
    c.optimizer.beta_1 = 0.9
    c.optimizer.beta_2 = 0.999
    c.optimizer.epsilon = 1e-6
    c.optimizer.weight_decay = 0.01
    c.schedule.warmup_steps = 0
    c.schedule.start_warmup_step = 0
    c.schedule.train_steps = 1000  # opt_learning_rate_training_steps: LR reaches its end here
    c.schedule.decay_power = 1.0
    # The value the decay reaches at train_steps and keeps after it (the reference's
    # optimization.py polynomial_decay end_learning_rate: 0, so closed division keeps 0).
    c.schedule.end_learning_rate = 0.0
    return c
