"""The small interface a workload implements to be served under LoadGen: `InferenceSpec`.

A workload gets every MLPerf Inference scenario by providing one function that builds an
`InferenceSpec` from the workload instance, named by its entry in `tpubench/registry.py` (name
or variant -> "module:function"), so that no workload class has to change. The harness
(`tpubench.infer`) owns the QSL, the SUT, batching, compilation, LoadGen settings and the logs;
the spec owns only what is specific to the benchmark: its samples, its forward function, its
metric and its bounds.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tpubench import registry
from tpubench.errors import UsageError

PyTree = Any


@dataclasses.dataclass(frozen=True)
class Samples:
    """The eval set on the host, preprocessed: `inputs` is an array or a dict of arrays whose
    leading dimension indexes samples; `labels` is whatever `accuracy` needs (leading dim too).

    Variable-size samples (`row_splits` given, [count + 1] nondecreasing offsets from 0): the
    leading dimension of `inputs` and `labels` indexes rows, and sample i is rows
    [row_splits[i], row_splits[i+1]) (a DLRM query sample: one user's user-item pairs). Batch
    buckets then count rows, `apply` maps rows to rows, and a sample's response is its rows.

    Variable-length samples (`lengths` given, [count] ints): the inputs named in
    `length_inputs` (keys of the `inputs` dict) are padded along axis 1, and sample i's valid
    part is its first `lengths[i]` positions (an RNN-T utterance's feature frames). With the
    spec's `length_buckets`, a batch is cut to the smallest bucket that holds its samples
    (`tpubench.infer.qsl`), so `apply` must not depend on positions past a sample's length.
    """

    inputs: PyTree
    labels: np.ndarray
    row_splits: np.ndarray | None = None
    lengths: np.ndarray | None = None
    length_inputs: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """Number of samples."""
        if self.row_splits is not None:
            return int(len(self.row_splits) - 1)
        return int(self.labels.shape[0])

    def sample_rows(self, indices: Any) -> np.ndarray:
        """Rows per sample of `indices` (all 1 without `row_splits`)."""
        idx = np.asarray(indices, np.int64)
        if self.row_splits is None:
            return np.ones(len(idx), np.int64)
        return self.row_splits[idx + 1] - self.row_splits[idx]


@dataclasses.dataclass(frozen=True)
class InferenceSpec:
    """What one benchmark declares to be served.

    Fields:
      mlperf_name: the MLPerf Inference benchmark name ("resnet50", "bert-99").
      load_samples: host side, called once before the run (untimed): the preprocessed eval set.
      apply: pure `(params, model_state, inputs) -> outputs` on a batch; outputs is ONE array
        whose leading dim is the batch and whose rows are the per-sample responses LoadGen
        logs (e.g. the top-1 class as int32, as the MLPerf reference does). The harness jits it
        once per batch bucket before the run.
      accuracy: host side, `(outputs [N, ...] in sample-index order, labels [N]) -> quality`.
      server_latency_bound_ms: the Server p99 bound of MLPerf Inference v0.7.
      multistream_latency_bound_ms: the v0.7 MultiStream per-query bound (0 = not a v0.7
        MultiStream benchmark); reported next to LoadGen's current MultiStream metric.
      reference_quality: the v0.7 FP32 reference quality on the full dataset (e.g. 0.7646).
      quality_fraction: the share of the reference to reach (0.99 for "-99" benchmarks).
      quality_metric: name of the metric `accuracy` returns.
      performance_sample_count: v0.7 `performance_sample_count` (samples LoadGen may load).
      scenarios: the LoadGen scenarios the benchmark has in v0.7 (names as on the command
        line; empty = all four); `tpubench infer` refuses the others before any compute
        (e.g. ssd-mobilenet is an edge benchmark: no Server; 3d-unet: Offline only).
      batch_sizes: the batch buckets compiled when the user names none (None: the harness's
        default); for variable-size samples they count rows and must hold the largest sample.
      length_buckets: lengths (axis 1 of `Samples.length_inputs`) compiled for every batch
        size; each sample is served at the smallest one >= its `Samples.lengths` entry and a
        batch never mixes lengths (empty: one length, the inputs' own). Only lengths that some
        sample needs are compiled.
      benchmark_model_and_data: True only when the config serves the MLPerf benchmark's own
        model on its own dataset (e.g. ResNet-50 v1.5 on ImageNet); anything else (a mini) is
        labelled "NOT AN MLPERF RESULT" whatever the profile (`tpubench.infer.labels`).
      calibration_inputs: optional host-side `(n) -> inputs`: the first n TRAINING samples in
        `apply`'s input format, the calibration set of `--quantize=int8
        --calibration_samples=n` (`tpubench.infer.quantize`); None: the benchmark cannot be
        calibrated (activations stay float).
      synthetic_samples: optional host-side `(n) -> Samples`: n random samples in `apply`'s
        input format (labels meaningless), served when the config's `data.source` is
        "synthetic" (performance mode only: `with_synthetic_samples`), so a user can measure
        serving throughput without the dataset; None: the benchmark needs its data.
      measure_reference: optional `(params, model_state) -> quality` on the same data without
        LoadGen (the training run's own eval); the accuracy check is then `quality_fraction`
        of this measured value, which is how a mini model on small data is judged.
    """

    mlperf_name: str
    load_samples: Callable[[], Samples]
    apply: Callable[[PyTree, PyTree, PyTree], Any]
    accuracy: Callable[[np.ndarray, np.ndarray], float]
    server_latency_bound_ms: float
    multistream_latency_bound_ms: float = 0.0
    reference_quality: float = 0.0
    quality_fraction: float = 0.99
    quality_metric: str = "accuracy"
    performance_sample_count: int = 1024
    measure_reference: Callable[[PyTree, PyTree], float] | None = None
    calibration_inputs: Callable[[int], PyTree] | None = None
    synthetic_samples: Callable[[int], Samples] | None = None
    benchmark_model_and_data: bool = False
    batch_sizes: tuple[int, ...] | None = None
    length_buckets: tuple[int, ...] = ()
    scenarios: tuple[str, ...] = ()

    @property
    def quality_target(self) -> float:
        """`quality_fraction` of the v0.7 reference (e.g. 0.99 * 0.7646 = 0.75695)."""
        return self.quality_fraction * self.reference_quality


def with_synthetic_samples(spec: InferenceSpec, mode: str) -> InferenceSpec:
    """The spec serving `spec.synthetic_samples(performance_sample_count)` instead of its data:
    never an MLPerf result (`benchmark_model_and_data` False), no accuracy, no calibration set.
    `UsageError` (before any compute) in accuracy mode or when the spec has no synthetic
    samples."""
    if spec.synthetic_samples is None:
        raise UsageError(f"{spec.mlperf_name} cannot serve synthetic samples (its InferenceSpec "
                         "has no synthetic_samples; resnet's has). Serve real data: drop "
                         "--config.data.source=synthetic (e.g. --config=mini).")
    if mode != "performance":
        raise UsageError("Synthetic samples have random labels, so accuracy mode would measure "
                         "nothing: pass --mode=performance, or serve real data (drop "
                         "--config.data.source=synthetic).")
    make = spec.synthetic_samples
    return dataclasses.replace(
        spec, load_samples=lambda: make(spec.performance_sample_count),
        benchmark_model_and_data=False, measure_reference=None, calibration_inputs=None)


def accuracy_variant(config: Any, variants: dict[str, float], benchmark: str) -> tuple[str, float]:
    """(name, fraction of the reference quality) of `eval.inference_variant`, for benchmarks
    with a -99 and a -99.9 variant (the first of `variants` is the default); `UsageError`
    naming the choices for any other name."""
    name = str(config.eval.get("inference_variant", next(iter(variants))))
    if name not in variants:
        raise UsageError(f"--config.eval.inference_variant={name!r} is not a v0.7 {benchmark} "
                         f"benchmark; use one of {', '.join(variants)}.")
    return name, variants[name]


def served_workloads() -> list[str]:
    """Names of the workloads that declare an inference spec."""
    return registry.served()


def inference_spec(workload: Any) -> InferenceSpec:
    """The `InferenceSpec` of a workload instance, built by the function the registry names for
    its name and the variant its config selects; `UsageError` if it has none."""
    name = workload.name
    build = registry.spec_function(name, workload.config)
    if build is None:
        raise UsageError(
            f"Workload {name!r} has no inference spec. Served workloads: "
            f"{', '.join(served_workloads())}. Add its 'module:function' to its entry in "
            "tpubench/registry.py."
        )
    return build(workload)


def eval_batches(workload: Any) -> Any:
    """The workload's eval batches on one process, at most the number one eval runs (the
    training loop's count: ceil(eval_samples / eval_batch_size)), in case the iterator repeats."""
    c = workload.config
    count = math.ceil(int(c.eval.get("samples", 0)) / int(c.eval.batch_size)) or None
    return itertools.islice(workload.eval_batches(0, 1), count)


def labelled_eval_samples(workload: Any) -> Samples:
    """Every real (mask 1) eval example of the workload: its "inputs" and int32 "label"
    arrays, the samples of a classifier or a segmenter (resnet, unet3d, deeplab)."""
    xs, ys = [], []
    for batch in eval_batches(workload):
        keep = np.asarray(batch["mask"]) > 0
        xs.append(np.asarray(batch["inputs"])[keep])
        ys.append(np.asarray(batch["label"])[keep])
    return Samples(np.concatenate(xs), np.concatenate(ys).astype(np.int32))


def first_train_samples(workload: Any, count: int, keys: Any) -> Any:
    """The first `count` samples of the workload's training stream (step 0 on, one process),
    cut to `keys` (one key: that array; a tuple: a dict of those arrays): a calibration set."""
    parts: list[Any] = []
    have = 0
    for batch in workload.train_batches(0, 0, 1):
        parts.append(batch)
        have += len(next(iter(batch.values())))
        if have >= count:
            break
    if isinstance(keys, str):
        return np.concatenate([np.asarray(b[keys]) for b in parts])[:count]
    return {k: np.concatenate([np.asarray(b[k]) for b in parts])[:count] for k in keys}


def training_eval_quality(workload: Any, params: PyTree, model_state: PyTree) -> float:
    """The workload's own eval (the one a training run reports) on these parameters, on one
    process: the harness's masked eval step (`tpubench.evaluation.eval_fn`), jitted, over
    `eval_batches`, then `evaluation.quality` - the same accumulation and `eval_finalize` as
    training's. The reference for the 99% rule."""
    import jax

    from tpubench import evaluation

    step = jax.jit(evaluation.eval_fn(workload))
    outputs = [step(params, model_state, batch) for batch in eval_batches(workload)]
    return evaluation.quality(workload, jax.device_get(outputs))
