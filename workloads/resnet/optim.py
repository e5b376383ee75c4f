"""The MLPerf ResNet optimizers: LARS or SGD+momentum, linear warmup then polynomial decay.

Weight decay and LARS trust ratios skip biases and batch-norm parameters (rank-1 leaves), as the
MLPerf reference does.
"""

from __future__ import annotations

import jax
import ml_collections
import optax

from tpubench.config import epochs_for_steps


def schedule(config: ml_collections.ConfigDict) -> optax.Schedule:
    """Linear warmup from 0 to the peak lr, then poly(power) decay to the end lr at the last
    step (`schedule.train_steps`)."""
    o, s = config.optimizer, config.schedule
    warmup, total = int(s.warmup_steps), int(s.train_steps)
    return optax.join_schedules(
        [
            optax.linear_schedule(0.0, o.learning_rate, max(1, warmup)),
            optax.polynomial_schedule(
                o.learning_rate, s.end_learning_rate, s.decay_power, max(1, total - warmup)
            ),
        ],
        [max(1, warmup)],
    )


def decay_steps(config: ml_collections.ConfigDict) -> int:
    """Steps of the polynomial decay (after warmup), as MLPerf logs them."""
    return int(config.schedule.train_steps) - int(config.schedule.warmup_steps)


def warmup_epochs(config: ml_collections.ConfigDict) -> float:
    """The warmup in epochs, the unit MLPerf logs for ResNet (the config gives steps)."""
    c = config
    return epochs_for_steps(c.schedule.warmup_steps, c.data.train_samples,
                            c.data.global_batch_size)


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
