"""BERT under MLPerf Inference v0.7 (`bert-99`): the masked-LM model served by LoadGen.

What is served: the workload's own pre-training model on its fixed eval set. Each sample is one
eval sequence (`input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`); its response
is the predicted token id at each of the `max_predictions_per_seq` masked positions (int32,
fixed size; unused prediction slots are answered too and ignored by the metric). The metric is
masked-word accuracy over the used slots, which is exactly the training eval's
`masked_lm_correct / masked_lm_count` (its weights are 0/1), so accuracy mode on a checkpoint
reproduces the training run's eval, and a config is judged against 99% of that eval on the same
parameters (`training_eval_quality`), as the ResNet mini is.

v0.7 figures kept: Server p99 bound 130 ms; no MultiStream (v0.7 BERT runs Server and Offline in
the datacenter, SingleStream and Offline at the edge); `performance_sample_count` 10,833 (the
SQuAD v1.1 dev features; LoadGen caps it at the eval set's size).

MLPerf's bert-99 task itself (BERT-large fine-tuned on SQuAD v1.1, F1 >= 89.96526) is served by
the `squad_*` configs (`workloads/bert/squad_inference.py`); the pre-training `full` config
refuses with a `UsageError` that says so, rather than serving masked-LM accuracy under the
bert-99 name.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from tpubench.errors import UsageError
from tpubench.infer.spec import InferenceSpec, Samples, eval_batches, training_eval_quality

SERVER_LATENCY_BOUND_MS = 130.0
SQUAD_F1_REFERENCE = 90.874  # v0.7 FP32 reference; bert-99 target 0.99 x this = 89.965
SQUAD_DEV_FEATURES = 10_833  # v0.7 performance_sample_count
INPUT_KEYS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
UNUSED_SLOT = -1  # label of a prediction slot with weight 0: never counted

SQUAD_NOT_IMPLEMENTED = (
    "MLPerf Inference v0.7 bert-99 is BERT-large fine-tuned on SQuAD v1.1 (seq 384, F1 >= "
    "89.96526), not the masked-LM (pre-training) model of the {config!r} config, so that config "
    "is not served as bert-99. Serve the SQuAD model instead: `tpubench infer bert "
    "--config=squad_full --config.data.dir=DIR --params=RUN_DIR ...` (made by `tpubench run bert "
    "--config=squad_full`), or a small masked-LM config, e.g. `tpubench infer bert --config=mini "
    "--scenario=Offline --workdir=DIR`."
)


def load_eval_samples(workload: Any) -> Samples:
    """Every real (mask 1) eval sequence of the workload, as host arrays.

    `inputs` holds the model's four inputs; `labels` [N, predictions] holds the target id of
    each used prediction slot and `UNUSED_SLOT` elsewhere.
    """
    inputs: dict[str, list[np.ndarray]] = {k: [] for k in INPUT_KEYS}
    labels = []
    for batch in eval_batches(workload):
        keep = np.asarray(batch["mask"]) > 0
        for key in INPUT_KEYS:
            inputs[key].append(np.asarray(batch[key], np.int32)[keep])
        weights = np.asarray(batch["masked_lm_weights"])[keep]
        if not np.all((weights == 0) | (weights == 1)):
            raise UsageError("BERT inference counts each masked word once: masked_lm_weights "
                             "must be 0 or 1.")
        ids = np.asarray(batch["masked_lm_ids"], np.int32)[keep]
        labels.append(np.where(weights > 0, ids, UNUSED_SLOT).astype(np.int32))
    return Samples({k: np.concatenate(v) for k, v in inputs.items()}, np.concatenate(labels))


def masked_lm_accuracy(outputs: np.ndarray, labels: np.ndarray) -> float:
    """Share of the used prediction slots whose predicted id equals the masked word."""
    used = labels != UNUSED_SLOT
    return float(np.sum((outputs == labels) & used)) / max(int(np.sum(used)), 1)


def bert_inference_spec(workload: Any) -> InferenceSpec:
    """The `InferenceSpec` of a BertWorkload: masked-LM predictions on its eval set.

    `UsageError` for the full MLPerf config (bert-99 is SQuAD, not served yet) and for the
    synthetic data source (it has no eval set to serve).
    """
    c = workload.config
    if bool(c.get("is_mlperf", False)):
        raise UsageError(SQUAD_NOT_IMPLEMENTED.format(config=c.get("config_name", "full")))
    if c.data.source == "synthetic":
        raise UsageError(
            "BERT inference serves the workload's eval set, and data_source='synthetic' has "
            "none. Use --config=mini (Shakespeare) or --config.data.source=tfrecord."
        )
    model = workload.model()

    def apply(params: Any, model_state: Any, inputs: dict[str, Any]) -> Any:
        mlm_logits, _ = model.apply(
            {"params": params, **model_state}, inputs["input_ids"], inputs["input_mask"],
            inputs["segment_ids"], inputs["masked_lm_positions"], train=False,
        )
        return jnp.argmax(mlm_logits, axis=-1).astype(jnp.int32)

    return InferenceSpec(
        mlperf_name="bert-99",
        load_samples=lambda: load_eval_samples(workload),
        apply=apply,
        accuracy=masked_lm_accuracy,
        server_latency_bound_ms=SERVER_LATENCY_BOUND_MS,
        multistream_latency_bound_ms=0.0,
        # The v0.7 reference (SQuAD F1) does not measure this task: no absolute target; the
        # check is 99% of the training eval of the same parameters.
        reference_quality=0.0,
        quality_fraction=0.99,
        quality_metric="masked_lm_accuracy",
        performance_sample_count=SQUAD_DEV_FEATURES,
        measure_reference=lambda p, s: training_eval_quality(workload, p, s),
    )
