"""Task distillation of a SQuAD model from a fine-tuned teacher run: `model.distill`.

`--config.model.distill.teacher=RUN` is the --workdir of a finished `tpubench run bert` SQuAD
run (e.g. `squad_mini_multi30k`, the BERT mini fine-tuned): the teacher's model is the config
its `summary.json` names, its params every parameter of its latest checkpoint (span head
included). The student's loss becomes, on each of the start and end logits (averaged),

    (1 - alpha) x span cross-entropy + alpha x T^2 x KL(softmax(teacher/T) || softmax(student/T))

(Hinton et al. 2015, the T^2 keeping the soft term's gradient scale; MobileBERT itself was
trained by distillation). `model.distill.temperature` is T, `model.distill.alpha` the weight;
alpha = 0 is the plain span loss. The logits are unmasked, as the span loss's.

The teacher's params ride in the train state's `model_state["teacher"]`, read from its
checkpoint by a host callback inside `init` (`pretrained.restore_all`), so the teacher's
forward pass is part of the same jitted train step (no host sync); the loss returns them
unchanged and no gradient reaches them: they are frozen. `check` finds a bad teacher (no run,
not a SQuAD run, other data, vocabulary or sequence length, other shapes) before any compute.
Eval and serving use the student alone: `tpubench infer` without the teacher restores the
student's params (`tpubench.loops.checkpoint.restore_variables` leaves the teacher on disk).
"""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections

from tpubench.errors import UsageError
from tpubench.mlperf import results
from workloads.bert import pretrained

HINT = ("--config.model.distill.teacher takes the --workdir of a finished `tpubench run bert` "
        "SQuAD run on the same data (e.g. --config=squad_mini_multi30k for "
        "mobilebert_squad_mini).")
# Keys that must equal the student's: the teacher reads the student's input ids.
SAME_DATA = ("data.source", "data.max_seq_length", "data.do_lower_case", "data.vocab_base_size",
             "model.vocab_size")


def teacher_dir(config: ml_collections.ConfigDict) -> str:
    """The teacher run's workdir, "" when the config does not distill."""
    distill = config.model.get("distill")
    return os.path.expanduser(str(distill.teacher)) if distill and distill.teacher else ""


def teacher_config(run_dir: str) -> ml_collections.ConfigDict:
    """The config the teacher run's summary.json names (`bert` workload), on the data source
    the run read (the summary's `data_source`)."""
    from tpubench import config as config_lib

    path = os.path.join(run_dir, results.SUMMARY_NAME)
    try:
        with open(path) as f:
            summary = json.load(f)
        name, source = summary["config"], summary["data_source"]
    except (OSError, ValueError, KeyError) as e:
        raise UsageError(f"distill.teacher={run_dir!r}: no readable {results.SUMMARY_NAME} "
                         f"naming its config ({type(e).__name__}). {HINT}") from e
    # The summary names the config, not the run's overrides; its data source it records.
    return config_lib.load("bert", name, {"data.source": source})


def _get(c: ml_collections.ConfigDict, dotted: str) -> Any:
    section, key = dotted.split(".")
    return c[section].get(key)


def check(config: ml_collections.ConfigDict, teacher: Any) -> None:
    """`UsageError` before any compute unless `teacher` (the teacher run's workload) fits the
    student `config`: a SQuAD run on the same data, vocabulary and sequence length, whose
    checkpoint holds exactly its model's params; T > 0 and 0 <= alpha <= 1."""
    d, run_dir = config.model.distill, teacher_dir(config)
    if not float(d.temperature) > 0:
        raise UsageError(f"--config.model.distill.temperature={d.temperature} must be > 0.")
    if not 0.0 <= float(d.alpha) <= 1.0:
        raise UsageError(f"--config.model.distill.alpha={d.alpha} must be in [0, 1] (the "
                         "weight of the teacher's term; 1 - alpha: the span loss).")
    tc = teacher.config
    if tc.model.get("task") != "squad":
        raise UsageError(f"distill.teacher={run_dir!r} is a {tc.config_name!r} run, not a SQuAD "
                         f"one. {HINT}")
    for key in SAME_DATA:
        if _get(tc, key) != _get(config, key):
            raise UsageError(f"distill.teacher={run_dir!r}: its {key} is {_get(tc, key)!r} "
                             f"({tc.config_name}), this config's {_get(config, key)!r}. {HINT}")
    pretrained.check_all(run_dir, jax.eval_shape(teacher._random_params, jax.random.key(0)),
                         HINT, "distill.teacher")


def teacher_params(teacher: Any, run_dir: str) -> Any:
    """The teacher's params (boxed as its model's), read from its checkpoint; traces."""
    return pretrained.restore_all(jax.eval_shape(teacher._random_params, jax.random.key(0)),
                                  run_dir)


def soft_loss(student: jax.Array, teacher: jax.Array, temperature: float) -> jax.Array:
    """T^2 x KL(softmax(teacher / T) || softmax(student / T)) over the last axis, batch mean."""
    t = jax.nn.log_softmax(teacher / temperature, -1)
    s = jax.nn.log_softmax(student / temperature, -1)
    kl = jnp.sum(jnp.exp(t) * (t - s), -1)
    return temperature ** 2 * kl.mean()


def mixed_loss(hard: jax.Array, student: tuple[jax.Array, jax.Array],
               teacher: tuple[jax.Array, jax.Array], temperature: float,
               alpha: float) -> tuple[jax.Array, jax.Array]:
    """((1 - alpha) x hard + alpha x soft, soft), soft = the mean of the start and end
    logits' `soft_loss`."""
    teacher = jax.tree.map(jax.lax.stop_gradient, teacher)
    soft = (soft_loss(student[0], teacher[0], temperature)
            + soft_loss(student[1], teacher[1], temperature)) / 2.0
    return (1.0 - alpha) * hard + alpha * soft, soft
