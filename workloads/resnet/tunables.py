"""What closed division lets a `--config.KEY=VALUE` override change in the ResNet-50 MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the rows of the MLPerf Training Rules
v0.7 hyperparameter table for `resnet | lars/sgd`, and the settings the rules leave free for this
benchmark, each with the rule it comes from. `tpubench.division` applies it, with the
harness-wide `HARNESS` table.
"""

from __future__ import annotations

import math

import ml_collections

from tpubench.mlperf.tunables import GRAPH, HP, RULES, Tunable, equals, one_of
from tpubench.nn import convolution

_RESNET = "resnet | lars/sgd | "


def _weight_decay(c: ml_collections.ConfigDict) -> str | None:
    wd = float(c.optimizer.weight_decay)
    n = math.log2(wd / 1e-4) if wd > 0 else 0.5
    if abs(n - round(n)) < 1e-9:
        return None
    return (f"optimizer.weight_decay={wd!r}: must be 0.0001 * 2^N for an integer N "
            f"({_RESNET}weight decay)")


def _resnet_momentum(c: ml_collections.ConfigDict) -> str | None:
    m, name, gbs = c.optimizer.momentum, c.optimizer.name, c.data.global_batch_size
    if name == "sgd" and not math.isclose(m, 0.9):
        return (f"optimizer.momentum={m!r}: SGD momentum must be 0.9 "
                "(resnet | sgd | sgd_opt_momentum)")
    if name == "lars" and gbs < 32768 and not math.isclose(m, 0.9):
        return (f"optimizer.momentum={m!r} at global_batch_size={gbs}: LARS momentum must be 0.9 "
                "for batch < 32k (resnet | lars | lars_opt_momentum)")
    return None


def _resnet_sgd_lr(c: ml_collections.ConfigDict) -> str | None:
    if c.optimizer.name != "sgd":
        return None
    k = c.optimizer.learning_rate / 0.001
    if abs(k - round(k)) < 1e-6:
        return None
    return (f"optimizer.learning_rate={c.optimizer.learning_rate!r}: SGD base lr must be "
            "0.001 * k for an integer k (resnet | sgd | sgd_opt_base_learning_rate)")


def _resnet_sgd_warmup(c: ml_collections.ConfigDict) -> str | None:
    """SGD warmup in whole epochs: schedule.warmup_steps a multiple of the steps per epoch."""
    w = c.schedule.warmup_steps
    per_epoch = math.ceil(c.data.train_samples / c.data.global_batch_size)
    if c.optimizer.name != "sgd" or (w >= 0 and w % per_epoch == 0):
        return None
    return (f"schedule.warmup_steps={w!r} ({w / per_epoch:g} epochs of {per_epoch} steps): SGD "
            "warmup must be an integer number of epochs >= 0 "
            "(resnet | sgd | opt_learning_rate_warmup_epochs)")


CLOSED_TUNABLES: dict[str, Tunable] = {
    "model.conv_impl": Tunable(GRAPH, one_of("model.conv_impl", convolution.IMPLS,
                                             "tpubench/nn/convolution.py: same convolution")),
    "data.uint8_pixels": Tunable(
        f"{RULES}, Numerical formats: \"CLOSED: The numerical formats [...] uint8 [...] are "
        "pre-approved for use\" (the resized pixels sent as uint8 and normalised on device, "
        "or normalised as float32 on the host)"),
    "data.global_batch_size": Tunable(
        HP + "resnet | lars | global_batch_size | unconstrained; "
        "resnet | sgd | global_batch_size | arbitrary constant"),
    "model.bn_span": Tunable(
        HP + "resnet | sgd | model_bn_span | arbitrary constant; Hyperparameter Borrowing: "
        "\"they may change batch size (local batch size, global batch size, batchnorm span)\""),
    "model.label_smoothing": Tunable(
        HP + "resnet | lars/sgd | label smoothing** | 0 or 0.1",
        one_of("model.label_smoothing", (0.0, 0.1), _RESNET + "label smoothing | 0 or 0.1")),
    "optimizer.name": Tunable(
        HP + "resnet | lars/sgd | opt_name | \"lars\" or \"sgd\"",
        one_of("optimizer.name", ("lars", "sgd"), _RESNET + "opt_name")),
    "optimizer.learning_rate": Tunable(
        HP + "resnet | lars | lars_opt_base_learning_rate | arbitrary constant; "
        "resnet | sgd | sgd_opt_base_learning_rate | 0.001 * k where k is an integer",
        _resnet_sgd_lr),
    "schedule.end_learning_rate": Tunable(
        HP + "resnet | lars | lars_opt_end_learning_rate* | fixed to reference; "
        "resnet | sgd | sgd_opt_end_learning_rate | 10^-4",
        equals("schedule.end_learning_rate", 1e-4, _RESNET + "end learning rate 1e-4")),
    "schedule.decay_power": Tunable(
        HP + "resnet | lars/sgd | *_opt_learning_rate_decay_poly_power | 2 (fixed)",
        equals("schedule.decay_power", 2.0, _RESNET + "decay poly power 2")),
    "schedule.warmup_steps": Tunable(
        HP + "resnet | lars | lars_opt_learning_rate_warmup_epochs | arbitrary constant; "
        "resnet | sgd | opt_learning_rate_warmup_epochs | integer >= 0",
        _resnet_sgd_warmup),
    "schedule.train_steps": Tunable(
        HP + "resnet | lars | lars_opt_learning_rate_decay_steps | unconstrained; "
        "resnet | sgd | sgd_opt_learning_rate_decay_steps | integer >= 0"),
    "optimizer.momentum": Tunable(
        HP + "resnet | lars | lars_opt_momentum | 0.9 for batch<32k, otherwise arbitrary "
        "constant; resnet | sgd | sgd_opt_momentum | 0.9",
        _resnet_momentum),
    "optimizer.weight_decay": Tunable(
        HP + "resnet | lars/sgd | *_opt_weight_decay | (0.0001 * 2 ^ N) where N is any "
        "integer",
        _weight_decay),
    "optimizer.epsilon": Tunable(
        HP + "resnet | lars | lars_epsilon* | Fixed to reference (0)",
        equals("optimizer.epsilon", 0.0, "resnet | lars | lars_epsilon")),
}
