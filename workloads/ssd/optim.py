"""The SSD reference's optimizer and learning-rate schedule.

Source: mlcommons/training single_stage_detector/ssd/train.py (v0.7):
- `torch.optim.SGD(params, lr, momentum=0.9, weight_decay=5e-4)`: weight decay on every
  parameter (biases and batch-norm included), added to the gradient before momentum;
- lr = 2.5e-3 * global_batch / 32 (`_BASE_LR`, `current_lr = args.lr * (global_batch_size /
  32)`);
- warmup (`lr_warmup`) for the first wb steps: lr(t) = base - (wb - t) * base / (wb * 2 **
  warmup_factor), applied before the update of step t;
- x0.1 at the start of each epoch in `--lr-decay-schedule` (default 40 50).
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_collections
import numpy as np
import optax


def schedule(config: ml_collections.ConfigDict) -> optax.Schedule:
    """lr(step) of the reference: the warmup ramp, then the base rate, x decay_factor after
    each boundary in `schedule.decay_steps`."""
    base = float(config.optimizer.learning_rate)
    s = config.schedule
    wb = int(s.warmup_steps)
    factor = 2.0 ** float(s.warmup_factor)
    # numpy, not jnp: built when the optimizer is, which `tpubench fit` does on compile-only
    # devices where no array can be computed; it becomes a constant when lr is traced.
    boundaries = np.asarray(list(s.decay_steps) or [0], np.int32)
    decay = float(s.decay_factor)

    def lr(step):
        step = jnp.asarray(step, jnp.int32)
        decays = jnp.sum(step >= boundaries) if list(s.decay_steps) else 0
        after = base * decay ** decays
        if wb <= 0:
            return after
        warm = base - (wb - step) * base / (wb * factor)
        return jnp.where(step < wb, warm, after)

    return lr


def optimizer(config: ml_collections.ConfigDict) -> optax.GradientTransformation:
    """SGD with momentum and weight decay on every parameter, as torch.optim.SGD."""
    o = config.optimizer
    if o.name != "sgd":
        raise ValueError(f"ssd: optimizer.name must be 'sgd' (the reference's), got {o.name!r}")
    return optax.chain(optax.add_decayed_weights(o.weight_decay),
                       optax.sgd(schedule(config), momentum=o.momentum))
