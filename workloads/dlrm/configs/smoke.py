"""DLRM smoke: the full architecture's shape at toy size, for one-step tests on every source.

Command (synthetic data, a few steps; tests/test_dlrm.py also runs it on a tiny Criteo TSV):
    python -m workloads.dlrm.main --config=workloads/dlrm/configs/smoke.py --workdir=DIR

26 tables of 3-1,000 rows, dim 8, bottom 13-16-8, top 359-16-1 (27 vectors -> 351 + 8).
Measured: one train + one eval step in a few seconds on CPU (compile dominated); its AUC on
random data is meaningless by design.
"""

from tpubench.config import base_config
from workloads.dlrm import criteo


def get_config():
    c = base_config()
    c.workload = "dlrm"
    c.data.dataset = "synthetic"
    c.data.source = "synthetic"

    c.model.num_dense = criteo.NUM_DENSE
    c.model.table_sizes = (1000, 3, 500, 7, 64, 3, 100, 20, 63, 1000, 300, 400, 10,
                     22, 119, 15, 4, 97, 14, 1000, 256, 999, 58, 129, 10, 36)
    c.model.embedding_dim = 8
    c.model.bottom_mlp = (16, 8)
    c.model.top_mlp = (16, 1)
    c.run.embedding_shard_min_rows = 256
    c.run.embedding_rows_multiple = 8
    c.model.dtype = "float32"

    c.data.global_batch_size = 32
    c.eval.batch_size = 32
    c.data.train_samples = 64
    c.eval.samples = 32
    c.eval.every_samples = 32
    c.run.max_train_samples = 32  # one step, one eval
    c.run.steps_per_dispatch = 1

    c.optimizer.name = "sgd"
    c.optimizer.sparse_embedding_update = True  # workloads/dlrm/sparse.py: same SGD step
    c.optimizer.learning_rate = 0.1
    c.schedule.warmup_steps = 2
    c.schedule.decay_start_step = 4
    c.schedule.decay_steps = 4
    c.schedule.decay_power = 2

    c.eval.target_metric = "auc"
    c.eval.target_value = 0.99
    return c
