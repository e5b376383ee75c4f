"""MLPerf Training v0.7 BERT-large, closed division: Google's JAX record hyperparameters.

    python -m workloads.bert.main --config=workloads/bert/configs/full.py --workdir=DIR \
        --config.data.dir=/path/to/mlperf_bert   # part-*-of-00500, eval_10k, bs64k_32k_ckpt/

BERT-large (24 x 1024, 16 heads, vocab 30,522; 336,226,108 params with pooler and heads), seq
512 / 76 predictions, from the MLPerf start checkpoint (TF `model.ckpt-28252` + bert_config.json),
LAMB lr 0.00288293, beta1 = beta2 = 0.88, wd 0.0166629, eps 1e-6, warmup 287 steps from step -76,
560 steps at global batch 8192; eval every 500K samples from 3M on the 10,000-example eval set;
target masked-LM accuracy 0.712.
Measured: not run at full scale here (no TPU slice). In the tests the full config instantiates
abstractly (param count exact) and its MLPerf log, from one step of a shrunken model on synthetic
data at global batch 8192, fails no compliance check but the quality target.
"""

from tpubench.mlperf import rules
from workloads.bert.configs._common import bert_base_config

# What a closed run needs besides the code (`tpubench list` prints it; the run checks it).
CLOSED_NEEDS = (
    "the MLPerf BERT data (part-*-of-00500 TFRecords and eval_10k, "
    "--config.data.dir) and the MLPerf start checkpoint "
    "bs64k_32k_ckpt/model.ckpt-28252 with its bert_config.json "
    "(model.init_checkpoint)"
)


def get_config():
    """The closed-division config."""
    c = bert_base_config()
    c.config_name = "full"
    c.is_mlperf = True
    c.submission.division = "closed"
    c.data.dataset = "mlperf-bert-wikipedia-20200101"
    c.data.source = "tfrecord"
    c.model.init_checkpoint = "bs64k_32k_ckpt/model.ckpt-28252"
    c.data.train_file_pattern = "part-*-of-00500"
    c.data.eval_file_pattern = "eval_10k"
    c.model.dtype = "bfloat16"

    c.data.global_batch_size = 8192
    c.eval.batch_size = 1024
    c.schedule.train_steps = 560
    c.data.train_samples = 560 * 8192  # the samples the LR schedule covers (as the record logged)
    c.eval.samples = 10_000
    c.run.max_train_samples = 560 * 8192
    # Evals every 62 steps (>= 500K samples) from step 372 (3,047,424 >= 3M samples), the
    # steps Google's JAX record evaluated at: offset 310 steps + 62.
    c.eval.every_samples = 500_000
    c.eval.offset_samples = 2_500_000  # first eval at the first step >= 3M samples
    c.run.steps_per_dispatch = 31

    c.eval.target_value = rules.target_value("bert")
    c.optimizer.learning_rate = 0.00288293
    c.optimizer.beta_1 = 0.88
    c.optimizer.beta_2 = 0.88
    c.optimizer.epsilon = 1e-6
    c.optimizer.weight_decay = 0.0166629
    c.schedule.warmup_steps = 287
    c.schedule.start_warmup_step = -76
    c.schedule.decay_power = 1.0
    return c
