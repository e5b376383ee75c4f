"""A 2-layer, 32-wide BERT for one-step tests on every data source (not a quality run).

    python -m workloads.bert.main --config=workloads/bert/configs/smoke.py --workdir=DIR

Measured: one train step + one eval of 8 examples (2 batches of 4); ~30 s wall, almost all of it
compile, on a 2-core CPU shared with other jobs (`test_smoke_synthetic_one_train_and_eval_step`).
"""

from workloads.bert.configs._common import bert_base_config


def get_config():
    """The smoke config (synthetic data unless overridden)."""
    c = bert_base_config()
    c.config_name = "smoke"
    c.data.dataset = "synthetic"
    c.data.source = "synthetic"
    c.model.update(dict(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=32,
    ))
    c.data.max_seq_length = 16
    c.data.max_predictions_per_seq = 3
    c.data.global_batch_size = 4
    c.eval.batch_size = 4
    c.data.train_samples = 4
    c.eval.samples = 8
    c.eval.every_samples = 4
    c.run.max_train_samples = 4
    c.schedule.train_steps = 10
    c.eval.target_value = 1.0
    return c
