"""tpubench.nn.layers.BatchNorm: batch norm over groups of `span` examples
(config.model.bn_span)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from tpubench.errors import UsageError
from tpubench.nn.layers import BatchNorm, group_stats

X = np.random.default_rng(0).normal(2.0, 3.0, size=(8, 4, 4, 3)).astype(np.float32)


def variables():
    """Non-trivial scale, bias and running statistics (so a wrong formula shows)."""
    return {"params": {"scale": jnp.array([0.5, 1.0, 2.0]), "bias": jnp.array([0.1, -0.2, 0.3])},
            "batch_stats": {"mean": jnp.array([1.0, 2.0, 3.0]),
                            "var": jnp.array([4.0, 5.0, 6.0])}}


def test_group_stats_are_the_statistics_of_each_group():
    mean, var = group_stats(jnp.asarray(X), span=2)
    groups = X.reshape(4, 2, 4, 4, 3)
    np.testing.assert_allclose(mean, groups.mean(axis=(1, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(var, groups.var(axis=(1, 2, 3)), rtol=1e-4)


def test_grouped_output_normalises_each_group_with_its_own_statistics():
    v = variables()
    y, new = BatchNorm(use_running_average=False, span=2, momentum=0.9, epsilon=1e-5).apply(
        v, X, mutable=["batch_stats"])
    groups = X.reshape(4, 2, 4, 4, 3)
    mu = groups.mean(axis=(1, 2, 3), keepdims=True)
    var = groups.var(axis=(1, 2, 3), keepdims=True)
    scale, bias = np.asarray(v["params"]["scale"]), np.asarray(v["params"]["bias"])
    expected = ((groups - mu) / np.sqrt(var + 1e-5) * scale + bias).reshape(X.shape)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
    # Running averages move towards the mean over groups of the group statistics.
    np.testing.assert_allclose(new["batch_stats"]["mean"],
                               0.9 * np.array([1.0, 2.0, 3.0]) + 0.1 * mu.mean(0).ravel(),
                               rtol=1e-5)
    np.testing.assert_allclose(new["batch_stats"]["var"],
                               0.9 * np.array([4.0, 5.0, 6.0]) + 0.1 * var.mean(0).ravel(),
                               rtol=1e-5)


@pytest.mark.parametrize("span", [0, 8])
def test_span_of_the_whole_batch_is_plain_batch_norm(span):
    v = variables()
    ours = BatchNorm(use_running_average=False, span=span, momentum=0.9)
    flax_bn = nn.BatchNorm(use_running_average=False, momentum=0.9)
    y, stats = ours.apply(v, X, mutable=["batch_stats"])
    y_ref, stats_ref = flax_bn.apply(v, X, mutable=["batch_stats"])
    np.testing.assert_allclose(y, y_ref, rtol=1e-6, atol=1e-6)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), stats, stats_ref)


def test_same_variables_as_flax_batch_norm():
    shapes = lambda v: jax.tree.map(jnp.shape, v)  # noqa: E731
    ours = BatchNorm(use_running_average=False, span=2).init(jax.random.PRNGKey(0), X)
    ref = nn.BatchNorm(use_running_average=False).init(jax.random.PRNGKey(0), X)
    assert shapes(ours) == shapes(ref)


def test_eval_uses_running_statistics_whatever_the_span():
    v = variables()
    y = BatchNorm(use_running_average=True, span=2).apply(v, X)
    y_ref = nn.BatchNorm(use_running_average=True).apply(v, X)
    np.testing.assert_allclose(y, y_ref, rtol=1e-6)


def test_span_that_does_not_divide_the_batch_is_a_usage_error():
    with pytest.raises(UsageError, match="model.bn_span=3 does not divide the batch of 8"):
        BatchNorm(use_running_average=False, span=3).init(jax.random.PRNGKey(0), X)
