"""`model.conv_impl` (tpubench/nn/convolution.py): 1x1 convolutions as matmuls compute what lax's
convolution computes, values and gradients, and `auto` picks by the traced platform."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.nn import convolution

NHWC = ("NHWC", "HWIO", "NHWC")


def _both(x, w, strides, padding, dn=NHWC):
    """(lax, matmul) outputs and input/kernel gradients of sum(conv(x, w) * probe)."""
    def run(fn):
        def f(x, w):
            y = fn(x, w, strides, padding, dimension_numbers=dn)
            return jnp.sum(y * jnp.cos(jnp.arange(y.size, dtype=y.dtype).reshape(y.shape))), y
        (_, y), g = jax.jit(jax.value_and_grad(f, argnums=(0, 1), has_aux=True))(x, w)
        return y, g
    return run(lax.conv_general_dilated), run(convolution.pointwise_as_matmul)


@pytest.mark.parametrize("strides,padding", [
    ((1, 1), "SAME"), ((2, 2), "SAME"), ((2, 2), "VALID"), ((1, 2), [(1, 0), (2, 1)]),
    ((2, 2), [(0, 1), (1, 1)]), ((3, 3), "SAME"),
])
def test_pointwise_matches_lax_values_and_gradients(strides, padding):
    kx, kw = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.normal(kx, (3, 9, 7, 5))
    w = jax.random.normal(kw, (1, 1, 5, 6))
    (y_ref, g_ref), (y, g) = _both(x, w, strides, padding)
    assert y.shape == y_ref.shape
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g[0], g_ref[0], rtol=1e-5, atol=1e-5)  # d input
    np.testing.assert_allclose(g[1], g_ref[1], rtol=1e-5, atol=1e-4)  # d kernel


def test_only_plain_pointwise_convolutions_become_matmuls():
    x = jnp.ones((2, 8, 8, 4))
    hlo = lambda w, **kw: jax.jit(lambda x, w: convolution.pointwise_as_matmul(  # noqa: E731
        x, w, (1, 1), "SAME", dimension_numbers=NHWC, **kw)).lower(x, w).as_text()
    assert "convolution" not in hlo(jnp.ones((1, 1, 4, 4)))
    assert "convolution" in hlo(jnp.ones((3, 3, 4, 4)))  # k x k stays a convolution
    assert "convolution" in hlo(jnp.ones((1, 1, 2, 4)), feature_group_count=2)
    assert "convolution" in hlo(jnp.ones((1, 1, 4, 4)), rhs_dilation=(2, 2))
    nchw = jax.jit(lambda x, w: convolution.pointwise_as_matmul(
        x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")))
    assert "convolution" in nchw.lower(jnp.ones((2, 4, 8, 8)), jnp.ones((4, 4, 1, 1))).as_text()


def test_auto_follows_the_traced_platform(monkeypatch):
    x, w = jnp.ones((2, 8, 8, 4)), jnp.ones((1, 1, 4, 4))
    fn = convolution.conv_fn("auto")

    def hlo():
        return jax.jit(lambda x, w: fn(x, w, (1, 1), "SAME", dimension_numbers=NHWC)).lower(
            x, w).as_text()

    mesh = jax.make_mesh((1,), ("data",))
    with jax.set_mesh(mesh):
        assert convolution.traced_platform() == "cpu"
        assert "convolution" not in hlo()
    monkeypatch.setattr(convolution, "traced_platform", lambda: "tpu")
    assert "convolution" in hlo()


def test_unknown_impl_is_a_usage_error():
    with pytest.raises(UsageError, match="model.conv_impl='im2col'"):
        convolution.conv_fn("im2col")


def _resnet_loss_and_grads(conv_impl: str):
    cfg = config_lib.load("resnet", "smoke", {"model.conv_impl": conv_impl,
                                             "data.source": "synthetic"})
    w = registry.create(cfg)
    params, state = jax.jit(w.init)(jax.random.PRNGKey(0))
    params, state = jax.tree.map(lambda v: getattr(v, "value", v), (params, state),
                                 is_leaf=lambda v: hasattr(v, "value"))
    batch = w.synthetic_batch(jax.random.PRNGKey(1), 8)
    fn = jax.jit(jax.value_and_grad(lambda p: w.loss(p, state, batch, jax.random.PRNGKey(2))[0]))
    return fn(params)


def test_resnet_loss_and_gradients_equal_across_impls():
    loss_x, g_x = _resnet_loss_and_grads("xla")
    loss_m, g_m = _resnet_loss_and_grads("matmul")
    np.testing.assert_allclose(loss_m, loss_x, rtol=1e-6)
    for a, b in zip(jax.tree.leaves(g_m), jax.tree.leaves(g_x), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_conv_impl_is_a_closed_division_setting():
    """How convolutions are computed may change in closed division; a bad value may not."""
    assert config_lib.load("resnet", "full", {"model.conv_impl": "xla"}).is_mlperf
    bad = config_lib.load("resnet", "full", {"model.conv_impl": "im2col"})
    assert not bad.is_mlperf
    assert any("model.conv_impl" in r for r in bad.submission.open_reasons)
    # Other workloads have no such key and are not checked for it (bert's full config loads).
    assert config_lib.load("bert", "full", {}).is_mlperf
