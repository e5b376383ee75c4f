"""A 2-layer, 32-wide BERT with the SQuAD span head, for one-step tests (not a quality run).

    tpubench run bert --config=squad_smoke --workdir=DIR          # synthetic data
    tpubench run bert --config=squad_smoke --config.data.source=json --config.data.dir=DIR

Sequence 64, query 16, stride 16 (the full config's 384 / 64 / 128 at small size). Measured:
see tests/test_squad_workload.py (one dispatch and one eval on a made SQuAD JSON).
"""

from workloads.bert.configs._squad import squad_base_config


def get_config():
    """The SQuAD smoke config (synthetic data unless overridden)."""
    c = squad_base_config()
    c.config_name = "squad_smoke"
    c.data.source = "synthetic"
    c.data.dataset = "synthetic"
    c.model.update(dict(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64,
    ))
    c.data.max_seq_length = 64
    c.data.max_query_length = 16
    c.data.doc_stride = 16
    c.data.global_batch_size = 4
    c.eval.batch_size = 4
    c.data.train_samples = 4
    c.eval.samples = 8
    c.eval.every_samples = 4
    c.run.max_train_samples = 4
    c.schedule.train_steps = 10
    c.optimizer.learning_rate = 1e-3
    return c
