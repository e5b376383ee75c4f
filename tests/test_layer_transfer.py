"""Layer-wise knowledge transfer (`workloads/bert/layer_transfer.py`): the feature-map and
attention-transfer terms against numpy, the layer map, and the config checks. The terms inside a
distilled train step: tests/test_squad_workload.py."""

from __future__ import annotations

import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from tpubench.errors import UsageError
from workloads.bert import layer_transfer


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_feature_loss_is_the_mean_squared_error_over_real_tokens():
    """2 rows of 3 tokens, 4 features, the last token of row 1 padding: the sum of squared
    differences over the 5 real tokens / (5 x 4). Bites (tried): the mask ignored (the padded
    token's large error enters: 20.43 against 1.57); the mean over features left out (x4)."""
    rng = np.random.default_rng(0)
    s = rng.normal(size=(2, 3, 4)).astype(np.float32)
    t = rng.normal(size=(2, 3, 4)).astype(np.float32)
    t[1, 2] += 10.0  # a padded token: must not count
    mask = np.array([[1, 1, 1], [1, 1, 0]], np.int32)
    want = np.sum(((s - t) ** 2)[mask == 1]) / (5 * 4)
    got = float(layer_transfer.feature_loss(jnp.asarray(s), jnp.asarray(t), jnp.asarray(mask)))
    assert got == pytest.approx(want, rel=1e-5)
    assert float(layer_transfer.feature_loss(jnp.asarray(t), jnp.asarray(t),
                                             jnp.asarray(mask))) == 0.0


def test_attention_loss_is_the_teachers_kl_over_heads_and_real_queries():
    """Probabilities [2 rows, 2 heads, 3 queries, 3 keys], the teacher's 0 on row 1's padded
    key (as BERT's -10000 bias gives) and row 1's padded query left out: the mean over heads
    and the 5 real queries of sum_k p_t (log p_t - log p_s). Bites (tried): KL's arguments
    swapped (9.14 against 0.66); the padded query counted (0.76)."""
    rng = np.random.default_rng(1)
    s = _softmax(rng.normal(size=(2, 2, 3, 3))).astype(np.float32)
    logits_t = rng.normal(size=(2, 2, 3, 3))
    logits_t[1, :, :, 2] = -np.inf  # row 1's key 2 is padding for the teacher
    t = _softmax(logits_t).astype(np.float32)
    assert t[1, 0, 0, 2] == 0.0
    mask = np.array([[1, 1, 1], [1, 1, 0]], np.int32)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.nansum(np.where(t > 0, t * (np.log(t) - np.log(s)), 0.0), -1)  # [b, h, q]
    want = np.sum(kl.mean(1)[mask == 1]) / 5
    got = float(layer_transfer.attention_loss(jnp.asarray(s), jnp.asarray(t),
                                              jnp.asarray(mask)))
    assert np.isfinite(got) and got == pytest.approx(want, rel=1e-5)
    assert float(layer_transfer.attention_loss(jnp.asarray(t), jnp.asarray(t),
                                               jnp.asarray(mask))) == pytest.approx(0, abs=1e-6)


def test_layer_pairs_same_depth_and_even_stride():
    """Same depth: block i to layer i (the paper's); twice as deep: blocks 1 and 3 (every
    second block, the last to the last layer)."""
    assert layer_transfer.layer_pairs(2, 2) == [(0, 0), (1, 1)]
    assert layer_transfer.layer_pairs(4, 2) == [(1, 0), (3, 1)]
    assert layer_transfer.layer_pairs(6, 3) == [(1, 0), (3, 1), (5, 2)]


def _cfg(layers=2, hidden=128, heads=2, feature=0.0, attention=0.0):
    return ml_collections.ConfigDict({"model": {
        "num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
        "distill": {"feature_weight": feature, "attention_weight": attention}}})


@pytest.mark.parametrize("student, teacher, match", [
    (_cfg(feature=-1.0), _cfg(), "feature_weight=-1.0 must be >= 0"),
    (_cfg(layers=3, feature=1.0), _cfg(), "3 blocks onto the teacher's 2 layers"),
    (_cfg(hidden=64, feature=1.0), _cfg(), "hidden_size 64 is not the teacher's 128"),
    (_cfg(heads=4, attention=1.0), _cfg(), "4 heads are not the teacher's 2"),
])
def test_check_refuses_what_does_not_fit(student, teacher, match):
    """Each misfit is a UsageError naming it; the fits pass (an attention-only transfer does not
    need equal widths, a feature-only one not equal heads; without a teacher the weights are
    unused, as alpha). Bites (tried): the width check on `num_hidden_layers` (no error)."""
    with pytest.raises(UsageError, match=match):
        layer_transfer.check(student, teacher)
    layer_transfer.check(_cfg(feature=1.0, attention=1.0, heads=4, hidden=64), None)
    layer_transfer.check(_cfg(layers=4, hidden=64, attention=1.0), _cfg())
    layer_transfer.check(_cfg(heads=4, feature=1.0), _cfg())
