"""The keys of the SQuAD v1.1 fine-tuning configs (`model.task = "squad"`): the MLPerf Inference
v0.7 reference's feature and answer constants (language/bert: `create_squad_data.py`,
`accuracy-squad.py`: seq 384, doc stride 128, query 64, n-best 20, max answer length 30,
uncased) and the bert-99 / bert-99.9 thresholds (`workloads/bert/squad_inference.py`)."""

from __future__ import annotations

import ml_collections

from workloads.bert.configs._common import bert_base_config
from workloads.bert.squad_inference import BERT_VARIANTS, SQUAD_F1_REFERENCE


def squad_base_config() -> ml_collections.ConfigDict:
    """BERT-large sizes at seq 384 with the SQuAD keys; AdamW as Google's `run_squad.py`."""
    c = bert_base_config()
    c.model.task = "squad"
    c.model.init_checkpoint_has_squad_head = False  # True: a SQuAD fine-tuned checkpoint
    # Or the --workdir of a `tpubench run bert` pre-training run (its encoder; "" = none).
    c.model.init_params = ""
    # Task distillation (workloads/bert/distill.py): the --workdir of a fine-tuned SQuAD run
    # ("" = none), the softmax temperature, the weight of the teacher's term (1 - alpha: the
    # span loss); the weights of the layer-wise transfer terms (layer_transfer.py: feature
    # maps, attention maps; 0 = off).
    c.model.distill = ml_collections.ConfigDict(dict(
        teacher="", temperature=1.0, alpha=0.5, feature_weight=0.0, attention_weight=0.0))
    c.data.max_seq_length = 384
    c.data.doc_stride = 128
    c.data.max_query_length = 64
    c.data.do_lower_case = True
    c.data.vocab_file = "vocab.txt"  # relative to data.dir unless absolute
    c.data.train_file = "train-v1.1.json"  # data.source = "json"
    c.data.eval_file = "dev-v1.1.json"
    c.data.train_split = "train"  # data.source = "tfds"
    c.data.eval_split = "validation"
    c.data.dataset = "squad/v1.1"
    c.eval.n_best_size = 20
    c.eval.max_answer_length = 30
    c.eval.target_metric = "f1"
    c.eval.inference_variant = "bert-99"
    c.eval.target_value = round(SQUAD_F1_REFERENCE * BERT_VARIANTS["bert-99"], 6)
    # run_squad.py: AdamWeightDecayOptimizer (b1 0.9, b2 0.999, eps 1e-6, wd 0.01), linear
    # warmup over 10% of the steps, then linear decay to 0.
    c.optimizer.name = "adamw"
    c.optimizer.learning_rate = 3e-5
    c.optimizer.beta_1 = 0.9
    c.optimizer.beta_2 = 0.999
    c.optimizer.epsilon = 1e-6
    c.optimizer.weight_decay = 0.01
    c.schedule.decay_power = 1.0
    return c
