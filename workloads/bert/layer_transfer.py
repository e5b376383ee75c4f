"""Layer-wise knowledge transfer from the distillation teacher (MobileBERT, Sun et al. 2020,
§3.3-3.5): `model.distill.feature_weight` and `model.distill.attention_weight`.

Added to `distill.mixed_loss`'s loss, each over the mapped (student block, teacher layer) pairs
(`layer_pairs`), averaged over the pairs:
  * feature-map transfer (§3.3): the mean squared error between the student block's output and
    the teacher layer's (both `hidden_size` wide: no projection), mean over the features and
    the real tokens (`input_mask`; the paper averages over every position);
  * attention transfer (§3.4): KL(teacher || student) of each head's attention distribution
    over the keys, mean over the heads and the real query tokens.
Weight 0 (the default) leaves the term out and the train step as it was; without a teacher
the weights are unused (as `temperature` and `alpha`). Both models sow their
layers' outputs (`hidden`) and attention probabilities (`attention_weights`, before dropout)
into the `intermediates` collection (`model.py`, `mobilebert.py`), read from the same jitted
step as the logits; the teacher's are constants (no gradient). Layer map: a student of the
teacher's depth maps block i to layer i (the paper's); a student k times as deep maps block
k (i + 1) - 1 to layer i (an even stride, the last block to the last layer).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import ml_collections

from tpubench.errors import UsageError


def weights(config: ml_collections.ConfigDict) -> tuple[float, float]:
    """(feature_weight, attention_weight) of `model.distill` (0.0 where absent)."""
    d = config.model.get("distill") or {}
    return float(d.get("feature_weight", 0.0)), float(d.get("attention_weight", 0.0))


def layer_pairs(student_layers: int, teacher_layers: int) -> list[tuple[int, int]]:
    """(student block, teacher layer) pairs, one per teacher layer (see the module doc)."""
    k = student_layers // teacher_layers
    return [(k * (i + 1) - 1, i) for i in range(teacher_layers)]


def check(config: ml_collections.ConfigDict, teacher: ml_collections.ConfigDict | None) -> None:
    """`UsageError` unless both weights are >= 0 and, where one is > 0 and there is a teacher,
    the teacher's layer count divides the student's, its width is the student's (features)
    and so is its head count (attention)."""
    feature, attention = weights(config)
    for key, value in (("feature_weight", feature), ("attention_weight", attention)):
        if not value >= 0.0:
            raise UsageError(f"--config.model.distill.{key}={value} must be >= 0.")
    if feature == attention == 0.0 or teacher is None:
        return  # without a teacher the weights are unused, as temperature and alpha
    s, t = config.model, teacher.model
    if int(s.num_hidden_layers) % int(t.num_hidden_layers):
        raise UsageError(f"Layer transfer maps the student's {s.num_hidden_layers} blocks onto "
                         f"the teacher's {t.num_hidden_layers} layers: a multiple is needed.")
    if feature and int(s.hidden_size) != int(t.hidden_size):
        raise UsageError(f"--config.model.distill.feature_weight={feature}: the student's "
                         f"hidden_size {s.hidden_size} is not the teacher's {t.hidden_size}.")
    if attention and int(s.num_attention_heads) != int(t.num_attention_heads):
        raise UsageError(f"--config.model.distill.attention_weight={attention}: the student's "
                         f"{s.num_attention_heads} heads are not the teacher's "
                         f"{t.num_attention_heads}.")


def _masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    m = mask.astype(jnp.float32)
    return jnp.sum(x * m) / jnp.maximum(jnp.sum(m), 1.0)


def feature_loss(student: jax.Array, teacher: jax.Array, mask: jax.Array) -> jax.Array:
    """Squared error [batch, length, features], mean over features and the real tokens."""
    diff = student.astype(jnp.float32) - teacher.astype(jnp.float32)
    return _masked_mean(jnp.mean(jnp.square(diff), -1), mask)


def attention_loss(student: jax.Array, teacher: jax.Array, mask: jax.Array) -> jax.Array:
    """KL(teacher || student) over the keys of [batch, heads, queries, keys] probabilities,
    mean over heads and the real queries. A teacher probability of 0 (a masked key) adds 0."""
    student, teacher = student.astype(jnp.float32), teacher.astype(jnp.float32)
    log_s = jnp.log(jnp.maximum(student, 1e-30))
    kl = jnp.sum(jax.scipy.special.xlogy(teacher, teacher) - teacher * log_s, -1)
    return _masked_mean(jnp.mean(kl, 1), mask)


def _layer(intermediates: Any, i: int) -> tuple[jax.Array, jax.Array]:
    layer = intermediates[f"layer_{i}"]
    return layer["hidden"][0], layer["attention"]["attention_weights"][0]


def transfer_loss(student: Any, teacher: Any, mask: jax.Array, pairs: list[tuple[int, int]],
                  feature_weight: float, attention_weight: float,
                  ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """(feature_weight x feature term + attention_weight x attention term, the terms by name:
    "feature_loss", "attention_loss", those of weight > 0) from the two models'
    `intermediates`, each term the mean over `pairs`."""
    teacher = jax.tree.map(jax.lax.stop_gradient, teacher)
    terms = {}
    if feature_weight > 0:
        terms["feature_loss"] = sum(feature_loss(_layer(student, s)[0], _layer(teacher, t)[0],
                                                 mask) for s, t in pairs) / len(pairs)
    if attention_weight > 0:
        terms["attention_loss"] = sum(attention_loss(_layer(student, s)[1],
                                                     _layer(teacher, t)[1], mask)
                                      for s, t in pairs) / len(pairs)
    total = (feature_weight * terms.get("feature_loss", 0.0)
             + attention_weight * terms.get("attention_loss", 0.0))
    return jnp.asarray(total, jnp.float32), terms
