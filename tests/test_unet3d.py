"""unet3d: the full nnU-Net checked abstractly (parameters, deep-supervision shapes, FLOPs), the
mean Dice of the reference's accuracy script, the MNI mini's split and batches, the BraTS reader
on a made directory, the weight converter on made files, and bad input."""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.loops import steps
from workloads.unet3d import brats, convert, dice, mni, model


def _workload(name: str, **overrides):
    return registry.create(config_lib.load("unet3d", name, overrides))


def _conv_flops(shape, in_channels, classes, feats) -> float:
    """2 * MACs of every conv, transposed conv and head of Generic_UNet at `shape`."""
    vox = np.prod(shape)
    flops, prev = 0.0, in_channels
    for d, f in enumerate(feats):
        v = vox / 8 ** d
        flops += 2 * 27 * v * (prev * f + f * f)
        prev = f
    for u in range(len(feats) - 1):
        skip, v = feats[-(u + 2)], vox / 8 ** (len(feats) - 2 - u)
        flops += 2 * v * prev * skip + 2 * 27 * v * (2 * skip * skip + skip * skip)
        prev = skip
    return flops + 2 * vox * prev * classes


def test_full_model_is_generic_unet_at_full_size_abstractly():
    """The full config's model, never run: 31,198,976 parameters, the count Generic_UNet's
    construction rules give for 4 modalities, 4 classes, features 32..320, 5 pools; deep
    supervision returns 5 logits from 224x224x160 down to 14x14x10; XLA's FLOP count of one
    forward is 3.63e12, within 2.5% of the convolutions' 2*MACs counted by hand (3.70e12;
    XLA's figure is 1.8% lower, measured, cause not investigated).
    Bites: base features 30 (Generic_UNet's class default) -> 27.4M parameters; a bias on the
    transposed convs -> the count is off by their channels; no stride in the bottleneck -> the
    lowest output is 28x28x20."""
    workload = _workload("full")
    c = workload.config
    params = steps.abstract_state(workload).params
    n = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))
    feats = model.stage_features(32, 320, 5)
    assert feats == [32, 64, 128, 256, 320, 320]
    assert n == model.parameter_count(4, 4, feats) == 31_198_976
    x = jax.ShapeDtypeStruct((1, *c.data.eval_shape, 4), jnp.float32)
    net = model.UNet3D(deep_supervision=True)
    outs = jax.eval_shape(lambda p, x: net.apply({"params": p}, x, train=True), params, x)
    assert [o.shape for o in outs] == [(1, 224 // 2 ** i, 224 // 2 ** i, 160 // 2 ** i, 4)
                                       for i in range(5)]
    lowered = jax.jit(lambda p, x: net.apply({"params": p}, x)).lower(params, x)
    flops = lowered.cost_analysis()["flops"]
    expected = _conv_flops((224, 224, 160), 4, 4, feats)
    assert expected == pytest.approx(3.6964e12, rel=1e-4)
    assert flops == pytest.approx(3.6287e12, rel=0.005)
    assert flops == pytest.approx(expected, rel=0.025)


def _medpy_dc(p: np.ndarray, g: np.ndarray) -> float:
    return 2.0 * np.count_nonzero(p & g) / (np.count_nonzero(p) + np.count_nonzero(g))


def test_mean_dice_is_the_accuracy_scripts_regions_and_nan_rule():
    """Per case and BraTS region, medpy's dc, NaN (left out) when the region is empty in both,
    mean over cases, then over the three regions; the device counts equal the host's.
    Bites: counting a both-empty case as Dice 0 -> the ET mean drops from 0.5 to 1/3; tumour
    core as labels (1, 3) -> another TC."""
    rng = np.random.default_rng(0)
    pred = rng.integers(0, 4, (3, 6, 5, 4)).astype(np.int32)
    true = rng.integers(0, 4, (3, 6, 5, 4)).astype(np.int32)
    pred[2][pred[2] == 3] = 0  # case 2: no enhancing tumour in either
    true[2][true[2] == 3] = 1
    true[1, 0, 0, 0] = dice.IGNORE  # a padding voxel: counts nowhere
    counts = dice.counts_np(pred, true, dice.BRATS_REGIONS)
    np.testing.assert_array_equal(
        np.asarray(dice.counts(jnp.asarray(pred), jnp.asarray(true), dice.BRATS_REGIONS)),
        counts)
    valid = true != dice.IGNORE
    expected = []
    for region in dice.BRATS_REGIONS.values():
        per_case = []
        for p, t, v in zip(pred, true, valid, strict=True):
            pm, gm = np.isin(p, region) & v, np.isin(t, region)
            per_case.append(np.nan if not pm.any() and not gm.any() else _medpy_dc(pm, gm))
        expected.append(np.nanmean(per_case))
    np.testing.assert_allclose(dice.per_region_dice(counts), expected, rtol=0, atol=1e-15)
    assert dice.mean_dice(counts) == pytest.approx(np.mean(expected), abs=1e-15)
    # The both-empty case is left out: ET over 2 cases, not 3.
    et = counts[:, 2]
    assert et[2].tolist() == [0, 0, 0]
    assert dice.per_region_dice(counts)[2] == pytest.approx(
        np.mean([2 * et[i, 0] / (et[i, 1] + et[i, 2]) for i in (0, 1)]))


def test_mini_crops_never_share_a_voxel_and_batches_are_a_function_of_the_step():
    """Every training crop lies in y < 60 and every eval crop in y >= 60; the 44 eval crops
    (16^3 tiles every 16 voxels) hold >= 10% brain; a train batch is the same for the same
    (seed, step) and differs for another step; labels are the 4 classes.
    Bites: drawing train corners up to the volume's end -> a crop reaches y >= 60; seeding the
    eval corruption from the step -> eval inputs change between evals."""
    cfg = config_lib.load("unet3d", "mini", {})
    crop = cfg.data.crop_size
    corners = mni.eval_corners(crop, mni.eval_stride(cfg))
    assert len(corners) == cfg.eval.samples == 44
    assert corners[:, 1].min() >= mni.EVAL_Y_START >= mni.TRAIN_Y_END
    image, labels = mni.load()
    assert image.shape == (98, 116, 94, 1) and set(np.unique(labels)) == {0, 1, 2, 3}
    for i in range(200):  # the corners the training stream draws
        corner = mni.train_corner(np.random.default_rng([0, i, 0]), crop)
        assert corner[1] + crop <= mni.TRAIN_Y_END
    first = next(mni.train_batches(cfg, 7, 0, 1))
    again = next(mni.train_batches(cfg, 7, 0, 1))
    other = next(mni.train_batches(cfg, 8, 0, 1))
    np.testing.assert_array_equal(first["inputs"], again["inputs"])
    assert not np.array_equal(first["inputs"], other["inputs"])
    assert first["inputs"].shape == (4, 16, 16, 16, 1) and first["label"].shape == (4, 16, 16, 16)
    # Eval crops are fixed: the same corrupted input every time, and not the clean crop.
    ev = mni.eval_arrays(crop, mni.eval_stride(cfg))
    clean, _ = mni.crop_at(corners[0], crop)
    assert not np.allclose(ev["inputs"][0], clean)
    np.testing.assert_array_equal(
        ev["inputs"][0], mni.corrupt(clean, np.random.default_rng([mni.EVAL_SEED, 0])))


def test_bias_field_is_the_same_per_mm_whatever_the_crop_size(monkeypatch):
    """Without noise, the field the same draws give a 16^3 crop is the central 16^3 of the
    field they give a 32^3 crop (a 16-point grid is the middle of the 32-point one), so after
    the per-crop z-scores the two inputs are one affine map apart (correlation 1).
    Bites: spreading the field over each crop's own span (linspace(-1, 1, n)) -> the 16^3
    field is the 32^3 one at twice the coordinates, correlation 0.964 (tried)."""
    monkeypatch.setattr(mni, "NOISE", 0.0)
    big = mni.corrupt(np.ones((32, 32, 32, 1), np.float32), np.random.default_rng(3))
    small = mni.corrupt(np.ones((16, 16, 16, 1), np.float32), np.random.default_rng(3))
    centre = big[8:24, 8:24, 8:24, 0].ravel()
    assert np.corrcoef(centre, small[..., 0].ravel())[0, 1] == pytest.approx(1.0, abs=1e-6)
    assert small.std() == pytest.approx(1.0, abs=1e-5)  # z-scored over the (all-brain) crop


def _made_brats(tmp_path, names=("case_a", "case_b"), shape=(16, 16, 8)):
    """A preprocessed directory as the reference writes it (unpadded crops) and labelsTr."""
    import nibabel as nib

    data_dir, label_dir = tmp_path / "pre", tmp_path / "labelsTr"
    data_dir.mkdir()
    label_dir.mkdir()
    rng = np.random.default_rng(1)
    truth = {}
    for i, name in enumerate(names):
        raw = rng.integers(0, 4, (20, 18, 12)).astype(np.uint8)  # SimpleITK (z, y, x) order
        bbox = [[2, 2 + 12 - i], [1, 1 + 14], [3, 3 + 7]]
        crop = raw[2:14 - i, 1:15, 3:10]
        data = rng.normal(size=(4, *crop.shape)).astype(np.float32)
        props = {"size_after_cropping": crop.shape, "crop_bbox": bbox}
        with open(data_dir / f"{name}.pkl", "wb") as f:
            pickle.dump([data, props], f)
        nib.save(nib.Nifti1Image(raw.transpose(2, 1, 0), np.eye(4)),
                 str(label_dir / f"{name}.nii.gz"))
        truth[name] = (data, crop)
    with open(data_dir / brats.CASE_LIST, "wb") as f:
        pickle.dump(list(names), f)
    return data_dir, label_dir, truth


def test_brats_reader_pads_as_the_reference_and_checks_labels(tmp_path):
    """A made reference directory: each case centred with pad_before = (p - r) // 2 (zeros in
    the image, IGNORE in the label), channels last, the label read with nibabel, put in
    SimpleITK's (z, y, x) order and cut to crop_bbox; a bbox that does not give
    size_after_cropping is a UsageError.
    Bites: not transposing nibabel's (x, y, z) -> the crop has the wrong shape (UsageError)."""
    data_dir, label_dir, truth = _made_brats(tmp_path)
    image, label = brats.load_case(str(data_dir), str(label_dir), "case_b", (16, 16, 8))
    data, crop = truth["case_b"]  # (11, 14, 7) -> before = (2, 1, 0)
    assert image.shape == (16, 16, 8, 4) and label.shape == (16, 16, 8)
    np.testing.assert_array_equal(image[2:13, 1:15, 0:7], np.moveaxis(data, 0, -1))
    np.testing.assert_array_equal(label[2:13, 1:15, 0:7], crop)
    assert (label == dice.IGNORE).sum() == 16 * 16 * 8 - crop.size
    assert image[label == dice.IGNORE].max() == 0
    with open(data_dir / "case_a.pkl", "rb") as f:
        data, props = pickle.load(f)
    props["crop_bbox"][0] = [0, 5]
    with open(data_dir / "case_a.pkl", "wb") as f:
        pickle.dump([data, props], f)
    with pytest.raises(UsageError, match="do not match"):
        brats.load_case(str(data_dir), str(label_dir), "case_a", (16, 16, 8))


@pytest.mark.parametrize("what, match", [("no dir", "preprocessed_files.pkl"),
                                         ("no labels", "label_dir"),
                                         ("missing case", "lack their")])
def test_brats_without_its_data_is_a_usage_error(tmp_path, what, match):
    """Bites: checking only the data dir -> a missing labelsTr fails late, in the reader."""
    data_dir, label_dir, _ = _made_brats(tmp_path)
    if what == "no dir":
        data_dir = tmp_path / "nothing"
    elif what == "no labels":
        label_dir = tmp_path / "nothing"
    else:
        (label_dir / "case_a.nii.gz").unlink()
    with pytest.raises(UsageError, match=match):
        _workload("full", **{"data.dir": str(data_dir), "data.label_dir": str(label_dir)}
                  ).check_data()


def _tiny_full():
    return _workload("full", **{"model.base_features": 4, "model.max_features": 8,
                                "model.num_pools": 2})


def _random_params(workload):
    """Random arrays of the model's parameter shapes (no init compiled)."""
    abstract = steps.abstract_state(workload).params
    leaves, tree = jax.tree.flatten(abstract)
    rng = np.random.default_rng(0)
    return jax.tree.unflatten(tree, [rng.normal(size=x.shape).astype(np.float32)
                                     for x in leaves])


def _torch_state(params) -> dict[str, np.ndarray]:
    """A PyTorch-layout state dict whose conversion is `params` (the inverse layouts)."""
    import flax

    out = {}
    for path, v in flax.traverse_util.flatten_dict(params).items():
        name = convert.torch_name(path, 2)
        v = np.asarray(v)
        if name.startswith("tu."):
            v = np.flip(v.transpose(3, 4, 0, 1, 2), (2, 3, 4))
        elif v.ndim == 5:
            v = v.transpose(4, 3, 0, 1, 2)
        out[name] = np.ascontiguousarray(v)
    return out


def test_converter_reads_onnx_and_npz_with_torch_semantics(tmp_path):
    """A made ONNX file (initializers named as Generic_UNet's state dict) and the same .npz
    convert to the params they were made from; the layouts are PyTorch's: a Conv3d weight
    [out, in, kd, kh, kw] computes the cross-correlation lax computes in NCDHW/OIDHW, and a
    ConvTranspose3d weight [in, out, 2, 2, 2] gives out[2i + a] = sum_c x[i, c] W[c, o, a].
    Bites: converting the transposed conv without the spatial flip -> the transposed-conv
    check fails; dropping .transpose for 5-d weights -> shape mismatch UsageError."""
    import onnx
    from onnx import helper, numpy_helper

    workload = _tiny_full()
    params = _random_params(workload)
    state = _torch_state(params)
    graph = helper.make_graph([], "unet", [], [],
                              initializer=[numpy_helper.from_array(v, k) for k, v in state.items()])
    onnx.save(helper.make_model(graph), str(tmp_path / "unet.onnx"))
    np.savez(tmp_path / "unet.npz", **state)
    abstract = steps.abstract_state(workload).params
    for f in ("unet.onnx", "unet.npz"):
        got = convert.convert(convert.read_weights(tmp_path / f), abstract, 2)
        jax.tree.map(np.testing.assert_array_equal, got, jax.tree.map(np.asarray, params))
    rng = np.random.default_rng(0)
    w = rng.normal(size=(3, 2, 2, 2, 2)).astype(np.float32)  # torch [in, out, kd, kh, kw]
    x = rng.normal(size=(1, 2, 3, 2, 3)).astype(np.float32)  # [N, D, H, W, C=in]
    tconv = nn.ConvTranspose(2, (2, 2, 2), strides=(2, 2, 2), padding="VALID", use_bias=False)
    y = tconv.apply({"params": {"kernel": convert.to_flax("tu.0.weight", w)}}, x)
    expected = np.zeros((1, 4, 6, 4, 2), np.float32)
    for i, j, k in np.ndindex(2, 3, 2):
        for a, b, c in np.ndindex(2, 2, 2):
            expected[0, 2 * i + a, 2 * j + b, 2 * k + c] = x[0, i, j, k] @ w[:, :, a, b, c]
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-5)
    wc = rng.normal(size=(2, 3, 3, 3, 3)).astype(np.float32)  # torch [out, in, kd, kh, kw]
    conv = nn.Conv(2, (3, 3, 3), padding=1, use_bias=False)
    y = conv.apply({"params": {"kernel": convert.to_flax("x.conv.weight", wc)}}, x)
    ref = jax.lax.conv_general_dilated(np.moveaxis(x, -1, 1), wc, (1, 1, 1), [(1, 1)] * 3,
                                       dimension_numbers=("NCDHW", "OIDHW", "NCDHW"))
    np.testing.assert_allclose(np.asarray(y), np.moveaxis(np.asarray(ref), 1, -1), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("break_", ["missing", "shape", "extra"])
def test_converter_mismatch_is_a_usage_error(tmp_path, break_):
    """Bites: skipping the shape check -> a [4, 4, 3, 3, 3] kernel loads into an [8, 4, ...]
    slot and fails later inside XLA."""
    workload = _tiny_full()
    state = _torch_state(_random_params(workload))
    if break_ == "missing":
        del state["tu.0.weight"]
    elif break_ == "shape":
        state["conv_blocks_context.1.blocks.0.conv.weight"] = np.zeros((4, 4, 3, 3, 3))
    else:
        state["seg_outputs.7.weight"] = np.zeros((4, 4, 1, 1, 1))
    with pytest.raises(UsageError, match="do not match this 3D U-Net"):
        convert.convert(state, steps.abstract_state(workload).params, 2)
    with pytest.raises(UsageError, match="do not exist"):
        convert.read_weights(tmp_path / "none.onnx")


# The step of the first eval at or above the mini's 0.63 target, per seed (configs/mini.py: runs
# of this config to 1,000 steps, deterministic on CPU); evals come every 25 steps.
MINI_TARGET_STEP = {0: 775, 1: 750}


@pytest.mark.slow
@pytest.mark.extended  # ~775 steps: 40 min on the loaded 2-core machine (configs/mini.py)
@pytest.mark.parametrize("seed", [0, 1])
def test_mini_reaches_its_dice_target_at_the_measured_step(tmp_path, seed):
    """The mini's run to its target, bounded in steps: it reaches mean Dice 0.63 (above every
    baseline of its docstring) at the measured eval, give or take one eval. Bites: a run that
    does not learn past the gradient-boosted trees' 0.6233 ends `aborted` at step 1,000 (the
    same curves' evals at 0.64 were met by one eval of one seed only)."""
    from tpubench.loops import supervised as train

    cfg = config_lib.load("unet3d", "mini", {"run.seed": seed})
    summary = train.train_and_evaluate(cfg, tmp_path / "run")
    assert summary["status"] == "success", summary["quality_history"]
    assert abs(summary["steps"] - MINI_TARGET_STEP[seed]) <= 25, summary["quality_history"]
    assert summary["final_quality"] >= 0.63
