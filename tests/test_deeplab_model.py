"""DeepLabv3+ MobileNetV2 (`workloads/deeplab/model.py`) checked abstractly at full size against
the published MLPerf mobile `deeplabv3` model (mlcommons/mobile_open vision/deeplab: output
stride 16, decoder stride 4, no atrous ASPP branches, 32 classes), its TF1 bilinear resize, and
the converter (`workloads/deeplab/convert.py`) on a small made file."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import slim_weights

from tpubench.errors import UsageError
from workloads.deeplab import convert
from workloads.deeplab.model import DeepLabV3Plus, _interp_matrix, resize_bilinear


def _abstract(model, size=512):
    x = jax.ShapeDtypeStruct((1, size, size, 3), jnp.float32)
    v = jax.eval_shape(lambda: model.init(jax.random.key(0), jnp.zeros(x.shape), train=False))
    return nn.unbox(v), x


def _count(tree) -> int:
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(tree))


def _head_count(classes=32, aspp=256, low=144, proj=48, dec=256, feat=320) -> int:
    """The reference head written out (conv weights + BN gamma/beta; logits with biases):
    image_pooling and aspp0 1x1 320->256, concat_projection 512->256, feature_projection0
    144->48, two split separable convs (3x3 depthwise + 1x1), logits 256->32 + 32."""
    bn = 2
    n = 2 * (feat * aspp + bn * aspp) + (2 * aspp * aspp + bn * aspp)
    n += low * proj + bn * proj
    cin = aspp + proj
    for _ in range(2):
        n += 9 * cin + bn * cin + cin * dec + bn * dec
        cin = dec
    return n + dec * classes + classes


def test_full_size_parameter_count_matches_the_published_model():
    """Backbone: Keras MobileNetV2(include_top=False) has 2,257,984 variables (the same
    V2_DEF); without its Conv_1 (320x1280 + 4x1280 BN) that is 1,843,264, which ours has
    (params + batch stats). Head 462,224 from the reference's model.py (`_head_count`).
    Total 2,273,936 params + 35,328 batch stats.
    Bites: the 1280 conv kept (+409,600), the decoder projecting to 256 instead of 48, an ASPP
    with the three atrous branches, 33 classes."""
    variables, _ = _abstract(DeepLabV3Plus())
    backbone = _count(variables["params"]["backbone"]) + _count(
        variables["batch_stats"]["backbone"])
    assert backbone == 2_257_984 - (320 * 1280 + 4 * 1280) == 1_843_264
    head = {k: v for k, v in variables["params"].items() if k != "backbone"}
    assert _count(head) == _head_count() == 462_224
    assert _count(variables["params"]) == 2_273_936
    assert _count(variables["batch_stats"]) == 35_328
    p = variables["params"]
    assert p["logits"]["kernel"].shape == (1, 1, 256, 32)
    assert p["feature_projection0"]["conv"]["kernel"].shape == (1, 1, 144, 48)
    assert p["decoder_conv0_depthwise"]["conv"]["kernel"].shape == (3, 3, 1, 304)


def test_full_size_shapes_and_flops_from_xla_cost_analysis():
    """Logits at stride 4 (128x128x32 for 512x512). 11.15 GFLOP per image by XLA's cost
    analysis (lowered, not compiled); the decoder's 128x128 layers alone are 2.68 G
    multiply-adds (written out below), so the rest is ~2.9 G, the size of the decoder-less
    MobileNetV2 DeepLab the TF model zoo lists at 2.75 B multiply-adds for 513x513.
    Bites: output stride 8 (the backbone's last 7 blocks at 64x64: ~+60%), no dilation
    (stride 32: fewer), the decoder at stride 8."""
    model = DeepLabV3Plus()
    variables, x = _abstract(model)
    out = jax.eval_shape(lambda v, x: model.apply(v, x, train=False), variables, x)
    assert out.shape == (1, 128, 128, 32)
    flops = jax.jit(lambda v, x: model.apply(v, x, train=False)).lower(
        variables, x).cost_analysis()["flops"]
    assert 11.10e9 < flops < 11.20e9, flops
    px = 128 * 128
    decoder_macs = px * (144 * 48 + 9 * 304 + 304 * 256 + 9 * 256 + 256 * 256 + 256 * 32)
    assert round(decoder_macs / 1e9, 2) == 2.68
    assert 2.6e9 < flops / 2 - decoder_macs < 3.1e9


def test_resize_matches_tf1_align_corners_false():
    """TF1 `resize_bilinear(align_corners=False)`: output i samples input i * in / out (no
    half-pixel offset), clamped at the edge. Values written out for 2 -> 4 and 4 -> 2.
    Bites: jax.image.resize (half-pixel centres: [1, 1.25, 1.75, 2] for 2 -> 4)."""
    x = jnp.asarray([1.0, 2.0]).reshape(1, 2, 1, 1)
    y = resize_bilinear(jnp.broadcast_to(x, (1, 2, 2, 1)), (4, 4))
    np.testing.assert_allclose(np.asarray(y)[0, :, 0, 0], [1.0, 1.5, 2.0, 2.0])
    np.testing.assert_allclose(_interp_matrix(4, 2), [[1, 0, 0, 0], [0, 0, 1, 0]])


def test_output_stride_16_dilates_the_last_blocks():
    """slim mobilenet_base at output_stride 16: the 1/32 stage (block14, TF layer_15) runs at
    stride 1, and blocks 15-17 at atrous rate 2, so a 64x64 input gives 4x4 features and a
    16x16 decoder map. Bites: the 1/32 stride kept (2x2 features)."""
    model = DeepLabV3Plus(num_classes=3, width=0.35, aspp_filters=8, decoder_filters=8,
                          projection_filters=8)
    v, x = _abstract(model, size=64)
    out, inter = jax.eval_shape(lambda v, x: model.apply(
        v, x, train=False, capture_intermediates=True), v, x)
    assert inter["intermediates"]["backbone"]["block17"]["__call__"][0][0].shape[1:3] == (4, 4)
    assert out.shape == (1, 16, 16, 3)


def _conv_dilations(model, v, x) -> set[tuple[int, int]]:
    """The rhs_dilation of every convolution the forward pass traces."""
    jaxpr = jax.make_jaxpr(lambda v, x: model.apply(v, x, train=False))(v, x)
    return {tuple(e.params["rhs_dilation"]) for e in jaxpr.jaxpr.eqns
            if e.primitive.name == "conv_general_dilated"}


def test_output_stride_8_dilates_from_the_1_16_stage_on():
    """The minis' output stride 8 (the full model keeps 16): slim's rule from the 1/16 stage
    (block7, TF layer_8) on: that block at stride 1 rate 1, blocks 8-13 at rate 2, the 1/32
    stage's blocks 14-17 at rate 4, so a 64x64 input gives 8x8 features and the decoder map
    stays 16x16. Output stride 16: rates 1 and 2 only. Bites: rates not compounding (no 4),
    the stride kept in block7 (4x4 features)."""
    model = DeepLabV3Plus(num_classes=3, width=0.35, output_stride=8, aspp_filters=8,
                          decoder_filters=8, projection_filters=8)
    v, x = _abstract(model, size=64)
    out, inter = jax.eval_shape(lambda v, x: model.apply(
        v, x, train=False, capture_intermediates=True), v, x)
    assert inter["intermediates"]["backbone"]["block17"]["__call__"][0][0].shape[1:3] == (8, 8)
    assert out.shape == (1, 16, 16, 3)
    assert _conv_dilations(model, v, x) == {(1, 1), (2, 2), (4, 4)}
    os16 = DeepLabV3Plus(num_classes=3, width=0.35, aspp_filters=8, decoder_filters=8,
                         projection_filters=8)
    assert _conv_dilations(os16, v, x) == {(1, 1), (2, 2)}


# ---- the converter on a made file -------------------------------------------------------------

def _small():
    model = DeepLabV3Plus(num_classes=5, width=0.35, aspp_filters=16, decoder_filters=16,
                          projection_filters=8)
    v, _ = _abstract(model, size=64)
    return v["params"], {"batch_stats": v["batch_stats"]}


SLIM_BLOCKS = slim_weights.slim_blocks(17)
HEAD_SCOPES = {"image_pooling": "image_pooling", "aspp0": "aspp0",
               "concat_projection": "concat_projection",
               "feature_projection0": "decoder/feature_projection0",
               **{f"decoder_conv{i}_{k}": f"decoder/decoder_conv{i}_{k}"
                  for i in range(2) for k in ("depthwise", "pointwise")}}


def _made_file(params):
    """TF-named arrays in TF layouts (names written out from the reference's scopes, not from
    the converter), each from its own draw; and the expected Flax value of every leaf."""
    rng = np.random.default_rng(0)
    tf, expected = {}, {}

    def conv(scope, ours, p):
        slim_weights.add_conv_bn(rng, tf, expected, scope, ours, p)

    conv("MobilenetV2/Conv", "backbone/stem", params["backbone"]["stem"])
    for i, scope in enumerate(SLIM_BLOCKS, start=1):
        for part, p in params["backbone"][f"block{i}"].items():
            conv(f"MobilenetV2/{scope}/{part}", f"backbone/block{i}/{part}", p)
    for ours, scope in HEAD_SCOPES.items():
        conv(scope, ours, params[ours])
    tf["logits/semantic/weights"] = expected["logits/kernel"] = rng.normal(
        size=params["logits"]["kernel"].shape).astype(np.float32)
    tf["logits/semantic/biases"] = expected["logits/bias"] = rng.normal(
        size=params["logits"]["bias"].shape).astype(np.float32)
    return tf, expected


def _flat(params, stats):
    got = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        got["/".join(k.key for k in path)] = np.asarray(leaf)
    for path, leaf in jax.tree_util.tree_flatten_with_path(stats["batch_stats"])[0]:
        keys = [k.key for k in path]
        got["/".join(keys[:-2] + ["stats", keys[-1]])] = np.asarray(leaf)
    return got


def test_every_array_of_the_made_file_lands_where_the_reference_names_it(tmp_path):
    """Bites: block i read from `expanded_conv_<i>` (values of the next block), the decoder's
    depthwise kernel not transposed, the head read without its `decoder/` scope, gamma and
    beta swapped."""
    params, state = _small()
    tf, expected = _made_file(params)
    np.savez(tmp_path / "deeplab.npz", **tf)
    got = _flat(*convert.load_file(tmp_path / "deeplab.npz", params, state))
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert len(expected) == len(tf)


def test_a_file_of_another_model_is_a_usage_error_naming_what_is_wrong(tmp_path):
    params, state = _small()
    tf, _ = _made_file(params)
    del tf["decoder/decoder_conv1_pointwise/weights"]
    tf["logits/semantic/weights"] = np.zeros((1, 1, 16, 151), np.float32)
    with pytest.raises(UsageError, match="2 problems") as error:
        convert.load(tf, params, state)
    assert "missing decoder/decoder_conv1_pointwise/weights" in str(error.value)
    assert "logits/semantic is (1, 1, 16, 151), the model wants (1, 1, 16, 5)" in str(
        error.value)
    with pytest.raises(UsageError, match="do not exist"):
        convert.load_file(tmp_path / "nope.pb", params, state)


def test_dilated_depthwise_shifts_equal_the_dilated_grouped_conv():
    """The minis' shifts depthwise (`DepthwiseShifts`) at atrous rate 2 computes the grouped
    conv's function with `kernel_dilation` 2, SAME padding, on an odd and an even size.
    Bites: shifts that ignore the rate (offsets i instead of 2i), or pad for the undilated
    kernel (output shifted by one pixel)."""
    from tpubench.nn.mobilenet import ConvBN

    for size in (7, 8):
        x = jax.random.normal(jax.random.key(size), (2, size, size, 5))
        conv = ConvBN(5, 3, depthwise=True, dilation=2, relu=False)
        v = conv.init(jax.random.key(1), x, train=False)
        shifts = ConvBN(5, 3, depthwise=True, dilation=2, relu=False, depthwise_impl="shifts")
        np.testing.assert_allclose(np.asarray(shifts.apply(v, x, train=False)),
                                   np.asarray(conv.apply(v, x, train=False)), atol=1e-5)
