"""The MLPerf ResNet optimizers: LARS or SGD+momentum, linear warmup then polynomial decay.

Weight decay and LARS trust ratios skip biases and batch-norm parameters (rank-1 leaves), as the
MLPerf reference does.
"""

from __future__ import annotations

import math

import jax
import ml_collections
import optax


def steps_per_epoch(config: ml_collections.ConfigDict) -> int:
    """Optimizer steps in one epoch of `train_samples`."""
    return math.ceil(config.train_samples / config.global_batch_size)


def schedule(config: ml_collections.ConfigDict) -> optax.Schedule:
    """Linear warmup from 0 to base lr, then poly(power) decay to end lr at the last step."""
    o = config.optimizer
    spe = steps_per_epoch(config)
    warmup = int(round(o.warmup_epochs * spe))
    total = int(round(o.train_epochs * spe))
    return optax.join_schedules(
        [
            optax.linear_schedule(0.0, o.base_learning_rate, max(1, warmup)),
            optax.polynomial_schedule(
                o.base_learning_rate, o.end_learning_rate, o.poly_power, max(1, total - warmup)
            ),
        ],
        [max(1, warmup)],
    )


def decay_steps(config: ml_collections.ConfigDict) -> int:
    """Steps of the polynomial decay (after warmup), as MLPerf logs them."""
    o = config.optimizer
    spe = steps_per_epoch(config)
    return int(round(o.train_epochs * spe)) - int(round(o.warmup_epochs * spe))


def _not_bn_or_bias(params):
    return jax.tree.map(lambda p: p.ndim > 1, params)


def optimizer(config: ml_collections.ConfigDict) -> optax.GradientTransformation:
    """LARS (`optimizer.name="lars"`) or SGD with momentum and masked weight decay."""
    o = config.optimizer
    lr = schedule(config)
    if o.name == "lars":
        return optax.lars(
            lr,
            weight_decay=o.weight_decay,
            weight_decay_mask=_not_bn_or_bias,
            trust_coefficient=0.001,
            eps=o.epsilon,
            trust_ratio_mask=_not_bn_or_bias,
            momentum=o.momentum,
        )
    if o.name == "sgd":
        return optax.chain(
            optax.add_decayed_weights(o.weight_decay, mask=_not_bn_or_bias),
            optax.sgd(lr, momentum=o.momentum),
        )
    raise ValueError(f"optimizer.name must be 'lars' or 'sgd', got {o.name!r}")
