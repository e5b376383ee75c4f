"""The workload contract: what a benchmark declares, and nothing about how it is run.

A workload is model + data + loss + metric + target. It never owns a training loop, a clock, a
logger, a mesh or a checkpoint: `tpubench.loops.supervised` does. Every method here is either pure
(safe to trace under `jax.jit`) or host-side and says so.

Batches are dicts of arrays. A train batch is the GLOBAL batch (leading dim = global batch size);
the harness shards it over the mesh's batch axes. An eval batch additionally carries a float
`"mask"` of shape [batch] (1 for real examples, 0 for padding) so that the last, partial eval
batch can be padded to a fixed shape without a recompile. The workload never applies that mask:
its `eval_step` returns per-example values and the harness masks them (`tpubench.evaluation`).
"""

from __future__ import annotations

import abc
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import linen as nn

from tpubench import sources
from tpubench.evaluation import EvalOutput, EvalResults

if TYPE_CHECKING:
    from tpubench.mlperf.tunables import Tunable

Batch = dict[str, Any]
PyTree = Any


@dataclasses.dataclass(frozen=True)
class Target:
    """A quality target: `metric` must reach `value` (>= if higher_is_better, else <=).

    A several-metric target (Mask R-CNN: {"BBOX": 0.377, "SEGM": 0.339}) sets `thresholds`;
    its quality is then a dict that must meet every threshold, `value` is the first one and
    `primary(quality)` the first metric (what histories and summaries keep as "quality").
    """

    metric: str
    value: float
    higher_is_better: bool = True
    thresholds: tuple[tuple[str, float], ...] = ()

    def primary(self, quality: float | Mapping[str, float]) -> float:
        """The quality as one number: itself, or a dict's first target metric."""
        if isinstance(quality, Mapping):
            return float(quality[self.thresholds[0][0]])
        return quality

    def reached(self, quality: float | Mapping[str, float]) -> bool:
        """True when `quality` meets the target (every threshold of a dict); NaN never does."""
        if isinstance(quality, Mapping):
            if not self.thresholds:
                raise ValueError(f"a dict quality {dict(quality)} needs eval.target_values")
            return all(Target(self.metric, t, self.higher_is_better).reached(
                float(quality.get(k, float("nan")))) for k, t in self.thresholds)
        if quality != quality:  # NaN
            return False
        return quality >= self.value if self.higher_is_better else quality <= self.value


class Workload(abc.ABC):
    """Base class of every benchmark. Subclasses set the class attributes and the abstract methods.

    Class attributes:
      name: registry name (`tpubench run NAME`).
      mlperf_name: the MLPerf `submission_benchmark` value ("resnet", "bert", ...).
      data_sources: `config.data.source` name -> `tpubench.sources.DataSource` (how to check,
        read train batches and read eval batches of each real dataset; "synthetic" is the
        harness's). An unknown name is a `UsageError` listing the known ones, at construction.
      closed_tunables: config key -> `tpubench.mlperf.tunables.Tunable`: what an override may
        change in this workload's MLPerf config and stay closed division, beyond the harness
        settings every workload has (`division.HARNESS`); by convention
        `workloads/<name>/tunables.py`.
    """

    name: str = ""
    mlperf_name: str = ""
    data_sources: ClassVar[Mapping[str, sources.DataSource]] = {}
    closed_tunables: ClassVar[Mapping[str, Tunable]] = {}
    # Which harness loop runs it: "supervised" (`tpubench.loops.supervised`) or "generations"
    # (self-play reinforcement learning, `tpubench.loops.selfplay.GenerationWorkload`).
    loop: ClassVar[str] = "supervised"

    @classmethod
    def derive(cls, config: ml_collections.ConfigDict, changed: Sequence[str]) -> list[str]:
        """Recompute, in place, the values of `config` that its file derives from keys the
        overrides `changed` (dotted keys) changed, unless an override set them too; return the
        keys recomputed. Called by `tpubench.config` after the overrides, before the division
        is decided (e.g. SSD's decay steps from its boundary epochs at a new batch size). The
        default derives nothing."""
        del config, changed
        return []

    def closed_requirements(self) -> list[str]:
        """What a closed-division run of this config needs by the rules and does not have
        (the reference's start checkpoint, target model, data layout), one sentence each that
        names the command or setting that gets it. Only asked when `config.is_mlperf`; a
        non-empty answer stops the run before any compute (`tpubench.loops.lifecycle.
        check_closed`). The default needs nothing."""
        return []

    def __init__(self, config: ml_collections.ConfigDict):
        self.config = config
        if self.data_sources:
            sources.check_name(self.name, self.data_sources, config.data.source)

    # ---- what the benchmark is -------------------------------------------------------------
    @property
    def target(self) -> Target:
        """The quality target of this config (mini configs have their own)."""
        c = self.config
        several = tuple((k, float(v)) for k, v in (c.eval.get("target_values") or {}).items())
        return Target(c.eval.target_metric, float(c.eval.target_value),
                      bool(c.eval.get("higher_is_better", True)), several)

    @property
    def train_samples(self) -> int:
        """Examples in one training epoch (MLPerf `train_samples`)."""
        return int(self.config.data.train_samples)

    @property
    def eval_samples(self) -> int:
        """Examples in one evaluation (MLPerf `eval_samples`)."""
        return int(self.config.eval.samples)

    # ---- model, state, loss ----------------------------------------------------------------
    @abc.abstractmethod
    def model(self) -> nn.Module:
        """The linen Module, with logical partitioning annotations on its params."""

    @abc.abstractmethod
    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        """Shapes/dtypes of a batch of `batch_size` examples (eval specs include "mask")."""

    def init(self, rng: jax.Array) -> tuple[PyTree, PyTree]:
        """Returns (params, model_state) for this config. Pure; runs under `jax.jit`/eval_shape.

        The default initialises `model()` on a zero batch of `batch_spec(1, train=False)` without
        the label/mask entries, calling `model.apply(variables, batch, train=...)` conventions; a
        workload whose model takes other inputs overrides it. Params may be `nn.Partitioned`
        boxes: the harness reads their logical names, then unboxes them.
        """
        spec = self.batch_spec(1, train=False)
        inputs = jnp.zeros(spec["inputs"].shape, spec["inputs"].dtype)
        variables = self.model().init({"params": rng, "dropout": rng}, inputs, train=False)
        params = variables["params"]
        model_state = {k: v for k, v in variables.items() if k != "params"}
        return params, model_state

    @abc.abstractmethod
    def loss(
        self, params: PyTree, model_state: PyTree, batch: Batch, rng: jax.Array
    ) -> tuple[jax.Array, tuple[PyTree, dict[str, jax.Array]]]:
        """Training loss of one batch. Pure.

        Returns (scalar loss, (new_model_state, metrics)). `metrics` are scalar means over the
        batch (e.g. {"loss": ..., "accuracy": ...}); the harness logs them one block late.
        """

    @abc.abstractmethod
    def optimizer(self) -> optax.GradientTransformation:
        """The optax transformation, with its learning-rate schedule built in."""

    def learning_rate(self, step: int | jax.Array) -> float | jax.Array:
        """The learning rate at `step` (for logs); 0 if the workload does not expose it."""
        return 0.0

    def train_update_fn(self) -> Callable[..., tuple[PyTree, PyTree, PyTree, dict]] | None:
        """Optional: an optimizer step of the workload's own, for updates the generic
        `value_and_grad` + `optimizer()` step cannot express cheaply (DLRM's row-sparse
        embedding update: a dense gradient of every table row would be materialised).

        None (the default): the harness's step. Otherwise a pure function
        `(params, opt_state, model_state, batch, rng, step) -> (params, opt_state, model_state,
        metrics)` with `metrics["loss"]`; it must compute the same update as the generic step
        (a test should compare the two trajectories). Used on the jit path; the pmap comparison
        path keeps the generic step.
        """
        return None

    @abc.abstractmethod
    def eval_step(self, params: PyTree, model_state: PyTree, batch: Batch) -> EvalOutput:
        """Eval statistics of one batch, PER EXAMPLE, computed on device. Pure.

        Returns `tpubench.evaluation.EvalOutput(sums=..., per_example=...)`, every array with
        the batch as leading dimension. `sums` are per-example statistics the harness adds up
        (correct predictions, a per-example loss, a [B, slots] weighted count); `per_example`
        are outputs the host needs row by row (decoded ids for BLEU, scores for AUC).

        The workload never applies `batch["mask"]`: the harness weights every `sums` row by it
        and drops the padding rows of `per_example` (`tpubench.evaluation.masked`), so padding
        cannot change the quality. Returning a batch-reduced scalar is an error. Prefer sums:
        per-example outputs cross device->host.
        """

    @abc.abstractmethod
    def eval_finalize(self, results: EvalResults) -> float:
        """Host side: the quality metric (accuracy, BLEU, AUC) from the whole eval.

        `results` (`tpubench.evaluation.EvalResults`): `sums` added over every real example of
        every batch and host, `per_example` rows of the real examples only (in eval-batch
        order), and `examples`, the number of real examples.
        """

    def synthetic_eval_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """An eval batch of the `synthetic` source, without "mask" (the harness adds it). Pure.

        Default: `synthetic_batch`, keeping the entries of the eval `batch_spec`; a workload
        whose eval batches hold other entries or shapes than its train batches overrides it.
        """
        spec = self.batch_spec(batch_size, train=False)
        batch = self.synthetic_batch(rng, batch_size)
        out = {}
        for name, s in spec.items():
            if name == "mask":
                continue
            if name not in batch or tuple(batch[name].shape) != tuple(s.shape):
                raise ValueError(
                    f"{self.name}: synthetic_batch has no {name!r} of shape {s.shape} for the "
                    "eval batch; override Workload.synthetic_eval_batch."
                )
            out[name] = batch[name].astype(s.dtype)
        return out

    # ---- data ------------------------------------------------------------------------------
    def data_source(self) -> sources.DataSource:
        """This config's entry of `data_sources` (`UsageError` listing the known ones)."""
        return sources.lookup(self.name, self.data_sources, self.config.data.source)

    def train_batches(
        self, start_step: int, process_index: int, process_count: int
    ) -> Iterator[Batch]:
        """Host side: this process's slice of each GLOBAL train batch, from step `start_step`.

        Yields numpy dicts of `global_batch_size // process_count` examples. Deterministic in
        (config.run.seed, step), so that a resumed run sees exactly the batches it would have seen:
        the data position in a checkpoint is just the step. Raises `tpubench.errors.UsageError`
        (with the command that prepares the data) when the dataset is missing. Default: the
        configured `data_sources` entry's `train_batches`.
        """
        return self.data_source().train_batches(self, start_step, process_index, process_count)

    def eval_batches(self, process_index: int, process_count: int) -> Iterator[Batch]:
        """Host side: this process's eval batches of `eval_batch_size // process_count`
        examples, padded with mask 0 so that every batch has the same shape. Default: the
        configured `data_sources` entry's `eval_batches`."""
        return self.data_source().eval_batches(self, process_index, process_count)

    def prepare(self) -> os.PathLike | None:
        """Host side, offline: the preprocessing the benchmark's reference does before training
        (vocabulary, tokenized and packed arrays, a manifest with counts), written once by
        `tpubench prepare WORKLOAD --config=...` so that every run of a result starts from the
        same data state and nothing is preprocessed on the clock of the first run only.

        Must be idempotent (an existing, complete preparation is kept). A workload whose runs
        need it makes `check_data` raise `UsageError` naming that command while it is missing.
        Returns the directory the prepared data is in (`tpubench prepare` prints it), None when
        this config has nothing to prepare. Default: nothing to prepare.
        """
        return None

    def check_data(self) -> None:
        """Host side, before any compute: raise `UsageError` if the configured data is missing.

        Must not read the data itself (MLPerf: nothing touches the dataset before run_start).
        Default: the configured `data_sources` entry's `check` (nothing for "synthetic"); a
        workload with checks of its own calls `super().check_data()`.
        """
        if self.data_sources and self.config.data.source != sources.SYNTHETIC:
            self.data_source().check(self)

    def synthetic_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """A train batch generated on device (the `synthetic` source). Pure.

        Default: uniform floats in [0, 1) and integers in [0, config.model.num_classes) for each
        entry of `batch_spec`. Override when labels need another range.
        """
        spec = self.batch_spec(batch_size, train=True)
        keys = jax.random.split(rng, len(spec))
        out = {}
        for k, (name, s) in zip(keys, sorted(spec.items()), strict=True):
            if jnp.issubdtype(s.dtype, jnp.integer):
                out[name] = jax.random.randint(
                    k, s.shape, 0, self.config.model.num_classes, s.dtype)
            else:
                out[name] = jax.random.uniform(k, s.shape, s.dtype)
        return out

    # ---- what the MLPerf log must carry ----------------------------------------------------
    def mllog_hyperparameters(self) -> dict[str, Any]:
        """The benchmark-specific MLPerf log keys (exactly-once keys of the v0.7 ruleset).

        A value may be a `(value, metadata_dict)` tuple when the ruleset checks metadata (e.g.
        transformer's `max_sequence_length` with `{"method": "discard"}`).
        """
        return {"global_batch_size": int(self.config.data.global_batch_size)}

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """(logical name, mesh axis or axes or None) rules for the names only this workload's
        annotations use, e.g. ResNet's `("conv_out", "tensor")`; they come before the harness's
        generic `tpubench.mesh.DEFAULT_RULES` ("batch" and the transformer names "vocab",
        "embed", "mlp", "heads", "kv", "length") and win over them. Every logical name of a
        param must be mapped by one or the other (None = replicated): the harness refuses an
        unmapped one. Mesh axes: "data", "fsdp", "tensor" (`tpubench.mesh.AXES`)."""
        return ()

