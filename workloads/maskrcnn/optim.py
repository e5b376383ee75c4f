"""The Mask R-CNN reference's optimizer and learning-rate schedule.

Source: mlcommons/training object_detection/pytorch/maskrcnn_benchmark (v0.7):
- solver/build.py `make_optimizer`: torch SGD(momentum 0.9) with one group per parameter: biases
  at BASE_LR * BIAS_LR_FACTOR (2) without weight decay (WEIGHT_DECAY_BIAS 0), every other
  trainable parameter at BASE_LR with WEIGHT_DECAY (1e-4); frozen parameters (the stem and res2,
  `FREEZE_CONV_BODY_AT = 2`, and the FrozenBatchNorm buffers) are not in the optimizer at all.
  A 2x learning rate is a 2x gradient before the momentum (SGD is linear in it).
- solver/lr_scheduler.py `WarmupMultiStepLR`: lr(it) = BASE_LR * warmup(it) * 0.1^(milestones
  passed), warmup(it) = factor * (1 - it / iters) + it / iters for it < WARMUP_ITERS (linear,
  factor 1/3, 500 iterations: config/defaults.py); engine/trainer.py calls `scheduler.step()`
  before each iteration's update, so the update of step t (from 0) uses it = t + 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

FROZEN, BIAS, WEIGHT = "frozen", "bias", "weight"


def schedule(config: ml_collections.ConfigDict) -> optax.Schedule:
    """lr(step) of `WarmupMultiStepLR` (see the module docstring)."""
    base = float(config.optimizer.learning_rate)
    s = config.schedule
    iters, factor = int(s.warmup_steps), float(s.warmup_factor)
    # numpy, not jnp: built when the optimizer is, which `tpubench fit` does on compile-only
    # devices where no array can be computed; it becomes a constant when lr is traced.
    milestones = np.asarray(list(s.decay_steps) or [2 ** 30], np.int32)
    gamma = float(s.decay_factor)

    def lr(step):
        it = jnp.asarray(step, jnp.int32) + 1
        decay = gamma ** jnp.sum(it >= milestones)  # bisect_right(milestones, it)
        if iters <= 0:
            return base * decay
        alpha = it.astype(jnp.float32) / iters
        warm = jnp.where(it < iters, factor * (1 - alpha) + alpha, 1.0)
        return base * warm * decay

    return lr


def param_labels(params, freeze_at: int, frozen_bn: bool):
    """FROZEN / BIAS / WEIGHT for every leaf of `params` (by its path): the backbone's stem
    (freeze_at >= 1) and stages layer1 .. layer{freeze_at - 1} are frozen, and with `frozen_bn`
    every batch norm's scale and bias (FrozenBatchNorm modules are named bn*, downsample_bn)."""
    frozen_stages = tuple(f"layer{i}_" for i in range(1, freeze_at))

    def label(path, _):
        names = [getattr(k, "key", str(k)) for k in path]
        if names[0] == "backbone":
            block = names[1]
            if freeze_at >= 1 and block in ("conv1", "bn1"):
                return FROZEN
            if block.startswith(frozen_stages) if frozen_stages else False:
                return FROZEN
            if frozen_bn and "bn" in names[-2]:
                return FROZEN
        return BIAS if names[-1] == "bias" else WEIGHT

    return jax.tree_util.tree_map_with_path(label, params)


def optimizer(config: ml_collections.ConfigDict) -> optax.GradientTransformation:
    """SGD as the reference builds it (module docstring)."""
    o, m = config.optimizer, config.model
    if o.name != "sgd":
        raise ValueError(f"maskrcnn: optimizer.name must be 'sgd' (the reference's), "
                         f"got {o.name!r}")
    per_group = optax.multi_transform(
        {FROZEN: optax.set_to_zero(), BIAS: optax.scale(float(o.bias_lr_factor)),
         WEIGHT: optax.add_decayed_weights(float(o.weight_decay))},
        lambda p: param_labels(p, int(m.freeze_at), bool(m.frozen_bn)))
    return optax.chain(per_group, optax.sgd(schedule(config), momentum=float(o.momentum)))
