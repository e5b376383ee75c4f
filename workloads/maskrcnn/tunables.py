"""What closed division lets a `--config.KEY=VALUE` override change in the Mask R-CNN MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `maskrcnn | sgd`, and the settings the rules leave free for this
benchmark, each with the rule it comes from. `tpubench.division` applies it, with the
harness-wide `HARNESS` table. The row `num_image_candidates` has no key here: the config logs
`model.rpn.num_image_candidates` while the model keeps `fpn_post_nms_train` proposals, so a
change to it would change the log only (it makes the run open). `derive` recomputes, at a new
global batch, what the config file computes from it (the decay steps of the rule's form with
K = 0, the warmup, the learning rate).
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_collections

from tpubench.mlperf.tunables import HP, RULES, Tunable, config_value, equals

_ROW = "maskrcnn | sgd | "
REFERENCE_BATCH = 16  # configs/e2e_mask_rcnn_R_50_FPN_1x.yaml SOLVER.IMS_PER_BATCH
REFERENCE_DECAY_STEPS = (60_000, 80_000)  # the same file's SOLVER.STEPS
REFERENCE_WARMUP_STEPS = 500  # maskrcnn_benchmark/config/defaults.py SOLVER.WARMUP_ITERS
LR_UNIT = 0.02  # the row's "0.02 * K for any integer K" (the 0.7.0 checker: is_integer(v / 0.02))


def at_batch(batch: int) -> dict[str, object]:
    """The config file's batch-dependent values at global batch `batch`."""
    scale = REFERENCE_BATCH / batch
    return {"schedule.decay_steps": tuple(int(s * scale) for s in REFERENCE_DECAY_STEPS),
            "schedule.warmup_steps": int(REFERENCE_WARMUP_STEPS * scale),
            "optimizer.learning_rate": LR_UNIT * batch / REFERENCE_BATCH}


def derive(c: ml_collections.ConfigDict, changed: Sequence[str]) -> list[str]:
    """After overrides `changed`: a new global batch recomputes each value of `at_batch` that no
    override set (a learning rate that is then not 0.02 * K makes the run open, saying so)."""
    if "data.global_batch_size" not in changed:
        return []
    done = []
    for key, value in at_batch(int(c.data.global_batch_size)).items():
        if key in changed or config_value(c, key) == value:
            continue
        section, leaf = key.split(".")
        c[section][leaf] = value
        done.append(key)
    return done


def _lr_multiple(c: ml_collections.ConfigDict) -> str | None:
    v = float(c.optimizer.learning_rate)
    if v > 0 and abs(v / LR_UNIT - round(v / LR_UNIT)) < 1e-6:
        return None
    return (f"optimizer.learning_rate={v!r}: must be 0.02 * K for an integer K "
            f"({_ROW}opt_base_learning_rate)")


def _decay_steps(c: ml_collections.ConfigDict) -> str | None:
    got = tuple(int(s) for s in c.schedule.decay_steps)
    batch = int(c.data.global_batch_size)
    if len(got) == len(REFERENCE_DECAY_STEPS):
        ref = [s * REFERENCE_BATCH / batch for s in REFERENCE_DECAY_STEPS]
        k = round(10 * (got[0] / ref[0] - 1))
        if all(abs(g - r * (1 + k / 10)) <= 1 for g, r in zip(got, ref, strict=True)):
            return None
    return (f"schedule.decay_steps={got!r}: must be (60000, 80000) * (1 + K/10) * 16 / "
            f"global_batch_size for one integer K, at batch {batch}: e.g. "
            f"{at_batch(batch)['schedule.decay_steps']!r} ({_ROW}opt_learning_rate_decay_steps)")


CLOSED_TUNABLES: dict[str, Tunable] = {
    "data.global_batch_size": Tunable(HP + _ROW + "global_batch_size | arbitrary constant "
                                      "(the decay steps, warmup and lr follow it: `derive`)"),
    "optimizer.learning_rate": Tunable(
        HP + _ROW + "opt_base_learning_rate | 0.02 * K for any integer K", _lr_multiple),
    "schedule.decay_steps": Tunable(
        HP + _ROW + "opt_learning_rate_decay_steps* | (60000, 80000) * (1 + K / 10) * 16 / "
        "global_batch_size where K is integer", _decay_steps),
    "schedule.decay_factor": Tunable(
        HP + _ROW + "opt_learning_rate_decay_factor* | fixed to reference (0.1)",
        equals("schedule.decay_factor", 0.1, _ROW + "opt_learning_rate_decay_factor")),
    "schedule.warmup_steps": Tunable(
        HP + _ROW + "opt_learning_rate_warmup_steps | unconstrained"),
    "schedule.warmup_factor": Tunable(
        HP + _ROW + "opt_learning_rate_warmup_factor | unconstrained"),
    "model.backbone_checkpoint": Tunable(
        f"{RULES}, Data State at Start of Run: where the reference's ImageNet-pretrained "
        "ResNet-50 file lives (maskrcnn-benchmark MODEL.WEIGHT), not what it is"),
    "data.annotations_dir": Tunable(
        f"{RULES}, Data State at Start of Run: \"Data can start on any durable storage "
        "system\" (where COCO's instances JSON files live, not what they are)"),
}
