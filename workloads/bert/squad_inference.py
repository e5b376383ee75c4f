"""BERT on SQuAD v1.1 under MLPerf Inference v0.7 (`bert-99`, `bert-99.9`), served by LoadGen.

What the v0.7 reference does (mlcommons/inference v0.7 `language/bert`) and what this does:
  * Samples: one feature a sample (`squad_QSL.py`: the 10,833 features of dev-v1.1 at seq 384,
    made by `create_squad_data.convert_examples_to_features` in LoadSamplesToRam's setup). Here
    `load_samples` converts the eval split once before LoadGen starts (`squad.py`).
  * Response: the reference returns the [384, 2] float32 (start, end) logits of the feature;
    the same here.
  * Accuracy (`accuracy-squad.py`): the logits of every feature -> the reference's answer
    post-processing (n-best 20, max answer length 30) -> official v1.1 F1 (`squad_eval.py`).
  * Targets (tools/submission/submission-checker.py, MODEL_CONFIG["v0.7"]["accuracy-target"]):
    bert-99 ("F1", 90.874 * 0.99) = 89.96526, bert-99.9 ("F1", 90.874 * 0.999) = 90.783126;
    "performance-sample-count" 10,833. Scenarios: datacenter Server (p99 bound 130 ms) and
    Offline, edge SingleStream and Offline; no MultiStream.
MobileBERT (`model.arch = "mobilebert"`, configs `mobilebert_squad_*`) is served as the MLPerf
Mobile v0.7 `mobilebert` benchmark: the same samples, response and F1, SingleStream only, target
93% of the float reference's F1 (../shared/docs/WORKLOADS.md: "~93% of F1 ~90"; the exact
reference figure is not recorded here, so `MOBILEBERT_F1_REFERENCE` is that rounded 90).
Variant: --config.eval.inference_variant=bert-99 (default) or bert-99.9. Only `squad_full` on
the SQuAD dev set with trained parameters can be an MLPerf result; smaller configs are judged
against 99% / 99.9% of their own training eval on the same parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpubench.errors import UsageError
from tpubench.infer.spec import (
    InferenceSpec,
    Samples,
    accuracy_variant,
    first_train_samples,
    training_eval_quality,
)

SQUAD_F1_REFERENCE = 90.874  # the v0.7 reference FP32 model's F1 on dev-v1.1
BERT_VARIANTS = {"bert-99": 0.99, "bert-99.9": 0.999}
PERFORMANCE_SAMPLE_COUNT = 10_833
SERVER_LATENCY_BOUND_MS = 130.0
SCENARIOS = ("Offline", "Server", "SingleStream")
INPUT_KEYS = ("input_ids", "input_mask", "segment_ids")
MOBILEBERT_F1_REFERENCE = 90.0  # WORKLOADS.md's rounded "F1 ~90" (see the module docstring)
MOBILEBERT_FRACTION = 0.93
MOBILEBERT_SCENARIOS = ("SingleStream",)


def squad_inference_spec(workload: Any) -> InferenceSpec:
    """The `InferenceSpec` of a BertSquadWorkload: start/end logits of every eval feature."""
    c = workload.config
    mobile = c.model.get("arch", "bert") == "mobilebert"
    if mobile:
        name, fraction = "mobilebert", MOBILEBERT_FRACTION
    else:
        name, fraction = accuracy_variant(c, BERT_VARIANTS, "BERT")
    if c.data.source == "synthetic":
        raise UsageError("bert-99 serves the SQuAD dev features, and data.source=synthetic has "
                         "none. Use --config.data.source=json (dev-v1.1.json in data.dir) or "
                         "tfds.")
    import jax.numpy as jnp  # here, not at the top: the SQuAD configs import this module's
    # constants, and loading a config (`tpubench list`) imports no JAX

    workload.check_data()  # vocabulary and files are there, before any compute
    model = workload.model()

    def load_samples() -> Samples:
        arrays = workload.eval_set[2]
        inputs = {k: np.asarray(arrays[k], np.int32) for k in INPUT_KEYS}
        return Samples(inputs, np.arange(len(arrays["input_ids"]), dtype=np.int32))

    def apply(params: Any, model_state: Any, inputs: dict[str, Any]) -> Any:
        start, end = model.apply({"params": params, **model_state}, inputs["input_ids"],
                                 inputs["input_mask"], inputs["segment_ids"], train=False)
        return jnp.stack([start, end], axis=-1).astype(jnp.float32)

    def accuracy(outputs: np.ndarray, labels: np.ndarray) -> float:
        logits = np.asarray(outputs, np.float32).reshape(len(labels), -1, 2)
        order = np.argsort(labels)
        return workload.squad_scores(logits[order, :, 0], logits[order, :, 1])["f1"]

    full_name = "mobilebert_squad_full" if mobile else "squad_full"
    is_full = c.get("config_name") == full_name and int(c.data.max_seq_length) == 384
    return InferenceSpec(
        mlperf_name=name,
        load_samples=load_samples,
        apply=apply,
        accuracy=accuracy,
        server_latency_bound_ms=0.0 if mobile else SERVER_LATENCY_BOUND_MS,
        reference_quality=MOBILEBERT_F1_REFERENCE if mobile else SQUAD_F1_REFERENCE,
        quality_fraction=fraction,
        quality_metric="f1",
        performance_sample_count=PERFORMANCE_SAMPLE_COUNT,
        benchmark_model_and_data=is_full,
        measure_reference=None if is_full else (
            lambda p, s: training_eval_quality(workload, p, s)),
        scenarios=MOBILEBERT_SCENARIOS if mobile else SCENARIOS,
        calibration_inputs=lambda n: first_train_samples(workload, n, INPUT_KEYS),
    )
