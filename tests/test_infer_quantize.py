"""`tpubench infer --quantize=int8`: post-training int8 weights per output channel
(`tpubench/infer/quantize.py`), checked on made arrays and through the CLI's usage errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from tpubench.errors import UsageError
from tpubench.infer import cli, quantize


def _params():
    rng = np.random.default_rng(0)
    # channel 0 large, channel 1 small, channel 2 all zero: per-channel scales differ by 1e3
    conv = rng.normal(size=(3, 3, 4, 3)).astype(np.float32) * np.array([10.0, 0.01, 0.0],
                                                                        np.float32)
    return {"conv": {"kernel": conv},
            "bn": {"scale": np.full(3, 1.5, np.float32), "bias": np.full(3, 0.25, np.float32)},
            "dense": {"kernel": rng.normal(size=(5, 2)).astype(np.float32),
                      "bias": np.array([0.123456, -7.0], np.float32)}}


def test_each_output_channel_is_within_half_its_own_scale():
    """Bites: one scale for the whole tensor (the 0.01 channel then rounds to zero: error
    0.01 x 127 / 10 scales) or the scale over the wrong axis (input channels)."""
    params = _params()
    q = quantize.quantize_params(params)
    w, kernel = params["conv"]["kernel"], q["conv"]["kernel"]
    assert kernel.values.dtype == jnp.int8 and kernel.scale.shape == (3,)
    absmax = np.abs(w).reshape(-1, 3).max(axis=0)
    np.testing.assert_allclose(np.asarray(kernel.scale)[:2], absmax[:2] / 127, rtol=1e-6)
    err = np.abs(np.asarray(kernel.dequantize()) - w).reshape(-1, 3).max(axis=0)
    assert np.all(err[:2] <= np.asarray(kernel.scale)[:2] / 2 + 1e-7)
    assert err[1] < 0.01 * 4 / 127  # the small channel keeps its own resolution
    assert err[2] == 0.0 and np.all(np.asarray(kernel.values)[..., 2] == 0)
    assert np.abs(np.asarray(kernel.values)).max() == 127  # the full int8 range is used


def test_only_kernels_are_quantized_and_the_rest_is_bit_exact():
    """Bites: quantizing every leaf of 1 or more dimensions (biases and norms become
    `Int8Weight`s and the byte count changes)."""
    params = _params()
    q = quantize.quantize_params(params)
    assert [type(leaf).__name__ for leaf in jax.tree.leaves(
        q, is_leaf=lambda x: isinstance(x, quantize.Int8Weight))] == [
        "ndarray", "ndarray", "Int8Weight", "ndarray", "Int8Weight"]
    back = quantize.dequantize_params(q)
    for path in (("bn", "scale"), ("bn", "bias"), ("dense", "bias")):
        np.testing.assert_array_equal(np.asarray(back[path[0]][path[1]]),
                                      params[path[0]][path[1]])
    stats = quantize.stats(params, quantize.quantize_params(params))
    assert stats["kernels_quantized"] == 2
    assert stats["max_weight_error_over_scale"] <= 0.5 + 1e-6
    # int8 kernels (+ float32 scales) and float biases/norms: 108 + 12 + 10 + 8 bytes + 36 float
    assert stats["param_bytes_quantized"] == 108 + 3 * 4 + 10 + 2 * 4 + (3 + 3 + 2) * 4


def test_the_quantized_pytree_passes_through_jit():
    """The served `apply` dequantizes inside the compiled step (int8 arrays are its inputs)."""
    params = _params()
    q = quantize.quantize_params(params)
    x = jnp.ones((1, 5))
    f = jax.jit(lambda p, x: x @ quantize.dequantize_params(p)["dense"]["kernel"])
    np.testing.assert_allclose(np.asarray(f(q, x)), np.asarray(x @ params["dense"]["kernel"]),
                               atol=5 * np.abs(params["dense"]["kernel"]).max() / 127)


def test_an_unknown_scheme_is_a_usage_error_before_any_compute(tmp_path, capsys):
    with pytest.raises(UsageError, match="--quantize='int4'.*none, int8"):
        quantize.check_scheme("int4")
    rc = cli.main(["resnet", "--config=mobilenet_edgetpu_smoke", "--scenario=Offline",
                   "--quantize=int4", f"--workdir={tmp_path / 'out'}"])
    assert rc == 2
    assert "Unknown --quantize='int4'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ---- int8 activations from a calibration set (--calibration_samples) -----------------------
class _TwoLayer(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2, name="out")(nn.relu(nn.Dense(3, name="hidden")(x)))


def _two_layer():
    model = _TwoLayer()
    params = model.init(jax.random.key(0), jnp.zeros((1, 4)))["params"]
    return model, jax.tree.map(np.asarray, params)


def _spec(model):
    from tpubench.infer.spec import InferenceSpec

    return InferenceSpec(mlperf_name="made", load_samples=lambda: None,
                         apply=lambda p, s, x: model.apply({"params": p}, x),
                         accuracy=lambda o, y: 0.0, server_latency_bound_ms=0.0)


def test_calibration_takes_the_max_of_each_kernels_input_over_every_batch():
    """The statistic of `hidden` is max |x| over all 10 samples (the largest sits in the last
    batch of 4), that of `out` max relu(hidden(x)); with percentile:50 the per-batch medians
    of |x| averaged. Bites (tried): the statistic of the first batch only (hidden: 3.0, not
    9.0)."""
    model, params = _two_layer()
    x = np.random.default_rng(1).normal(size=(10, 4)).astype(np.float32)
    x[1, 2], x[9, 0] = 3.0, -9.0
    scales = quantize.calibrate(_spec(model).apply, params, {}, x, 4, None)
    assert set(scales) == {"hidden", "out"}
    assert scales["hidden"] == pytest.approx(9.0)
    h = np.maximum(x @ params["hidden"]["kernel"] + params["hidden"]["bias"], 0)
    assert scales["out"] == pytest.approx(np.abs(h).max(), rel=1e-5)
    medians = quantize.calibrate(_spec(model).apply, params, {}, x, 4, 50.0)
    want = np.mean([np.percentile(np.abs(x[i:i + 4]), 50) for i in (0, 4, 8)])
    assert medians["hidden"] == pytest.approx(want, rel=1e-5)


def test_calibrated_apply_rounds_each_kernels_input_to_its_int8_grid():
    """The served function with scales = the int8 weights applied to inputs rounded to
    multiples of scale/127 and clipped at the statistic (0.5 here, below the largest |x|),
    layer by layer, computed here in numpy. Bites (tried): the scales ignored (the weights-only
    output: all 12 values differ)."""
    model, params = _two_layer()
    x = np.random.default_rng(2).normal(size=(6, 4)).astype(np.float32)
    scales = {"hidden": 0.5, "out": 1.5}
    spec, qparams = quantize.quantized_spec(_spec(model), params, scales)
    got = np.asarray(jax.jit(spec.apply)(qparams, {}, x))
    w = {k: np.asarray(v["kernel"].dequantize()) for k, v in qparams.items()}

    def fq(a, stat):
        step = np.float32(stat / 127)
        return np.clip(np.round(a / step), -127, 127) * step

    h = np.maximum(fq(x, 0.5) @ w["hidden"] + params["hidden"]["bias"], 0)
    want = fq(h, 1.5) @ w["out"] + params["out"]["bias"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    weights_only = (np.maximum(x @ w["hidden"] + params["hidden"]["bias"], 0) @ w["out"]
                    + params["out"]["bias"])
    assert np.abs(got - weights_only).max() > 0.01


@pytest.mark.parametrize("flags, match", [
    (["--calibration_samples=8"], "--calibration_samples applies to --quantize=int8 only"),
    (["--quantize=int8", "--calibration_samples=8", "--calibration=p99"],
     "Unknown --calibration='p99'"),
    (["--quantize=int8", "--calibration_samples=-1"], "must be >= 0"),
])
def test_bad_calibration_flags_are_usage_errors_before_any_compute(tmp_path, capsys, flags,
                                                                    match):
    rc = cli.main(["resnet", "--config=mobilenet_edgetpu_smoke", "--scenario=Offline", *flags,
                   f"--workdir={tmp_path / 'out'}"])
    assert rc == 2 and match in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
