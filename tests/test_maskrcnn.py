"""Mask R-CNN R-50-FPN (MLPerf `maskrcnn`): the full model checked abstractly, the reference's
schedule and optimizer groups, the backbone converter, a shrunk full config through the harness
(two-metric eval_accuracy, the official checker), bad input, and (extended: ~40-50 min) the
mini run to both targets, reached at its 1,500-step budget's last eval (configs/mini.py)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import runs
from flax import linen as nn

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
from workloads.maskrcnn import optim

SYNTHETIC = {"data.source": "synthetic"}
# The smoke's network inside the full config: everything the log records stays the full one's.
SHRUNK = {**SYNTHETIC, "data.global_batch_size": 2, "eval.batch_size": 2, "eval.samples": 2,
          "eval.every_samples": 2, "run.max_train_samples": 2, "run.steps_per_dispatch": 1,
          "model.dtype": "float32", "data.image_size": 64, "data.max_boxes": 8,
          "data.gt_mask_size": 32, "model.stage_sizes": (1, 1, 1, 1),
          "model.widths": (4, 4, 8, 8), "model.stem_width": 8, "model.fpn_channels": 8,
          "model.mlp_dim": 16, "model.mask_convs": (8, 8, 8, 8),
          "model.anchor_sizes": (8, 16, 32, 64, 128), "model.rpn.pre_nms_train": 64,
          "model.rpn.post_nms_train": 32, "model.rpn.fpn_post_nms_train": 64,
          "model.rpn.pre_nms_test": 64, "model.rpn.post_nms_test": 32,
          "model.rpn.fpn_post_nms_test": 32, "model.roi.batch": 16,
          "eval.max_per_class": 10, "eval.max_detections": 10}


def _workload(name: str, **overrides):
    return registry.create(config_lib.load("maskrcnn", name, overrides))


def test_full_model_has_44347573_parameters_and_fpn_levels_p2_to_p6():
    """By shape inference: 44,347,573 parameters besides the frozen batch norms' 53,120
    affines. Reference figure: torchvision's maskrcnn_resnet50_fpn (the same R-50-FPN, RPN, 2-FC
    box head and 4-conv mask head; FrozenBatchNorm2d as buffers) has 44,401,393 at 91 classes;
    at 81 the predictors lose 10 x 1,025 (cls), 40 x 1,025 (boxes) and 10 x 257 (masks):
    44,347,573. A 1344 x 1344 input gives P2..P6 of 336, 168, 84, 42, 21.
    Bites: biases in the backbone convs, a 3x3 FPN lateral, P6 from a strided conv."""
    w = _workload("full", **SYNTHETIC)
    params, state = jax.eval_shape(w.init, jax.random.key(0))
    leaves = jax.tree_util.tree_leaves_with_path(nn.unbox(params))
    total = sum(x.size for _, x in leaves)
    frozen_bn = sum(x.size for p, x in leaves if "bn" in p[-2].key)
    assert (total - frozen_bn, frozen_bn) == (44_347_573, 53_120)
    feats = jax.eval_shape(lambda p, s, x: w.model().apply({"params": p, **s}, x,
                                                           method="features"),
                           nn.unbox(params), state, jnp.zeros((1, 1344, 1344, 3)))
    assert [f.shape[1] for f in feats] == [336, 168, 84, 42, 21]
    assert all(f.shape[-1] == 256 for f in feats)
    assert sum(len(a) for a in w.anchors) == 3 * sum(s * s for s in (336, 168, 84, 42, 21))


def test_reference_schedule_and_logged_keys():
    """WarmupMultiStepLR with the trainer's scheduler.step() before each update: step t uses
    it = t + 1; factor 1/3 over 500 iterations; x0.1 at 60,000 and 80,000. Logged keys =
    closed_maskrcnn.yaml's. Bites: it = t (lr(0) = 0.02 / 3 exactly)."""
    w = _workload("full", **SYNTHETIC)
    lr = w.learning_rate
    assert float(lr(0)) == pytest.approx(0.02 * (1 / 3 * (1 - 1 / 500) + 1 / 500), rel=1e-6)
    assert float(lr(498)) < 0.02 and float(lr(499)) == pytest.approx(0.02)
    assert float(lr(59_998)) == pytest.approx(0.02)
    assert float(lr(59_999)) == pytest.approx(0.002)
    assert float(lr(79_999)) == pytest.approx(0.0002)
    assert w.mllog_hyperparameters() == {
        "global_batch_size": 16, "opt_base_learning_rate": 0.02,
        "opt_learning_rate_warmup_steps": 500, "opt_learning_rate_warmup_factor": 1 / 3,
        "num_image_candidates": 1000, "opt_learning_rate_decay_factor": 0.1,
        "opt_learning_rate_decay_steps": [60_000, 80_000], "min_image_size": 800,
        "max_image_size": 1333}
    assert w.target.thresholds == (("BBOX", 0.377), ("SEGM", 0.339))


def test_optimizer_freezes_the_stem_res2_and_batch_norms_and_doubles_bias_steps():
    """One update from gradients of ones at lr 0.02 / 3 (step 0), no momentum history: frozen
    leaves (stem, layer1, every batch norm) move 0, biases -2 lr, weights -lr (1 + 1e-4 w).
    Bites: layer2 frozen too (freeze_at read as the last frozen stage + 1)."""
    w = _workload("full", **SHRUNK)
    params = nn.unbox(jax.eval_shape(w.init, jax.random.key(0))[0])
    params = jax.tree.map(lambda x: jnp.full(x.shape, 0.5, x.dtype), params)
    tx = w.optimizer()
    upd = jax.jit(lambda p: tx.update(jax.tree.map(jnp.ones_like, p), tx.init(p), p)[0])(params)
    lr0 = float(w.learning_rate(0))
    bb = upd["backbone"]
    assert float(jnp.abs(bb["conv1"]["kernel"]).max()) == 0.0
    assert float(jnp.abs(bb["layer1_0"]["conv2"]["kernel"]).max()) == 0.0
    assert float(jnp.abs(bb["layer3_0"]["bn2"]["scale"]).max()) == 0.0
    np.testing.assert_allclose(bb["layer2_0"]["conv1"]["kernel"], -lr0 * (1 + 1e-4 * 0.5),
                               rtol=1e-6)
    np.testing.assert_allclose(upd["fpn"]["inner1"]["bias"], -2 * lr0, rtol=1e-6)
    labels = optim.param_labels(params, 2, True)
    assert labels["box"]["fc6"]["kernel"] == optim.WEIGHT
    assert labels["backbone"]["layer2_0"]["downsample_conv"]["kernel"] == optim.WEIGHT



def test_backbone_converter_loads_a_made_r50_file(tmp_path):
    """torchvision names -> the R-50 body: a bottleneck's conv3 and downsample land transposed,
    the frozen batch norm's running stats in batch_stats; a missing tensor is a UsageError
    naming ResNet-50. Bites: the stats left at their init (0 / 1); the workload loading with
    convert's default network (the message asked for ResNet-34)."""
    w = _workload("full", **SHRUNK)
    sd = runs.made_torchvision_state_dict(w)
    path = tmp_path / "r50.npz"
    np.savez(path, **sd)
    w2 = _workload("full", **SHRUNK, **{"model.backbone_checkpoint": str(path)})
    w2.check_data()
    params, state = w2.init(jax.random.key(0))
    p, s = nn.unbox(params)["backbone"], state["batch_stats"]["backbone"]
    np.testing.assert_array_equal(p["layer3_0"]["conv3"]["kernel"],
                                  sd["layer3.0.conv3.weight"].transpose(2, 3, 1, 0))
    np.testing.assert_array_equal(p["layer2_0"]["downsample_conv"]["kernel"],
                                  sd["layer2.0.downsample.0.weight"].transpose(2, 3, 1, 0))
    np.testing.assert_array_equal(s["layer4_0"]["bn2"]["var"], sd["layer4.0.bn2.running_var"])
    np.testing.assert_array_equal(p["bn1"]["scale"], sd["bn1.weight"])
    del sd["layer4.0.conv3.weight"]
    np.savez(path, **sd)
    with pytest.raises(UsageError, match="ResNet-50 conv1..layer4.*missing "
                                         "layer4.0.conv3.weight.*torchvision's resnet50"):
        w2.init(jax.random.key(0))


def test_bad_input_is_a_usage_error_before_compute():
    """COCO not prepared (tfds; tests/test_maskrcnn_coco.py: the instances files), an input
    size P6 cannot divide and an unknown eval.mask_paste are refused by check_data; an unknown
    source at construction. Bites: check_data not wired; the mask_paste check removed (a
    KeyError after the whole eval)."""
    with pytest.raises(UsageError, match="tfds build coco/2017"):
        _workload("full", **{"data.dir": "/nonexistent/tfds"}).check_data()
    with pytest.raises(UsageError, match="multiple of 64"):
        _workload("smoke", **{"data.image_size": 96}).check_data()
    with pytest.raises(UsageError, match="unknown data_source"):
        _workload("mini", **{"data.source": "imagenet"})
    with pytest.raises(UsageError, match="mask_paste"):
        _workload("smoke", **{"eval.mask_paste": "nearest"}).check_data()
    assert "maskrcnn" in registry.names()


def test_mini_eval_scores_ground_truth_like_outputs_near_one():
    """The mini's eval_finalize on its first 20 eval canvases, given the ground truth as
    detections (boxes, labels, score 0.9, each mask as its 28 x 28 box cells): BBOX 1.0 and SEGM
    >= 0.97 (0.9988 measured on 100 canvases). With the reference's paste (eval.mask_paste=
    reference, half a pixel off this suite's mask cells) SEGM was 0.42 on 100 canvases: the bug
    behind the mini's SEGM 0.000. Bites: the mini on the reference paste (SEGM 0.4085 here)."""
    from tpubench.datasets import canvas
    from tpubench.detection import masks
    from tpubench.evaluation import EvalResults
    from workloads.maskrcnn import input_pipeline

    def finalize(**overrides):
        w = _workload("mini", **overrides)
        n, size = 20, float(w.config.data.image_size)
        ev = input_pipeline.canvas_eval_set(canvas.CanvasSpec.of_config(w.config), n,
                                            int(w.config.data.gt_mask_size))
        real = ev["labels"] > 0
        cells = np.zeros(ev["labels"].shape + (28, 28), np.float16)
        for i, j in zip(*np.nonzero(real), strict=True):
            cells[i, j] = masks.crop_to_box(ev["gt_masks"][i, j], ev["boxes"][i, j], 28)
        p = {"det_boxes": ev["boxes"] / size, "det_scores": np.where(real, 0.9, 0.0),
             "det_labels": ev["labels"], "det_masks": cells, "gt_boxes": ev["boxes"] / size,
             "gt_labels": ev["labels"], "gt_crowd": ev["crowd"], "gt_area": ev["area"],
             "gt_masks": ev["gt_masks"], "size": ev["size"]}
        return w.eval_finalize(EvalResults({}, p, float(n)))

    got = finalize()
    assert got["BBOX"] == pytest.approx(1.0) and got["SEGM"] >= 0.97, got
    assert finalize(**{"eval.mask_paste": "reference"})["SEGM"] < 0.6


def test_mask_loss_weight_scales_the_mask_term_only_and_full_keeps_the_plain_sum():
    """The loss is rpn_objectness + rpn_box + classifier + box_reg + model.mask_loss_weight *
    mask (the metrics stay unweighted), on the smoke's network and a synthetic batch at weight
    3 (one compile); the full config keeps the reference's plain sum (weight 1). Bites: the
    weight not read from the config (the mini's would do nothing), applied to another term or
    to the logged mask metric, or the full config's weight changed."""
    assert config_lib.load("maskrcnn", "full", {}).model.mask_loss_weight == 1.0
    w = _workload("smoke", **{"model.mask_loss_weight": 3.0})
    params, state = nn.meta.unbox(w.init(jax.random.PRNGKey(0)))
    batch = w.synthetic_batch(jax.random.PRNGKey(1), 2)
    loss, (_, m) = jax.jit(w.loss)(params, state, batch, jax.random.PRNGKey(2))
    rest = m["rpn_objectness"] + m["rpn_box"] + m["classifier"] + m["box_reg"]
    assert float(m["mask"]) > 0.1
    assert float(loss) == pytest.approx(float(rest + 3.0 * m["mask"]), rel=1e-5)


def test_mini_keeps_its_measured_width_schedule_and_targets_and_full_the_reference():
    """The mini's run (e) (configs/mini.py, seed 1: BBOX .5701 / SEGM .5726 at step 1,500): FPN
    and mask head 64 wide, lr 0.02 after 100 warmup steps to step 1,249, x0.1 at 1,249 and
    1,449 (the schedule counts iterations from 1, as WarmupMultiStepLR), 1,500 steps, mask loss
    x4, targets 0.53 / 0.53 above the ink-component baseline (0.4763 / 0.4982), reached by seeds
    1 and 0 at step 1,500; the full config keeps the reference's widths and decays. Bites: the
    mini back on the 32-wide nets or the decays at 1,000 / 1,250 of (d) (SEGM .493 at step
    1,500), a target at or under a baseline, the full config's values changed."""
    c = config_lib.load("maskrcnn", "mini", {})
    w = registry.create(c)
    assert (c.model.fpn_channels, tuple(c.model.mask_convs)) == (64, (64, 64, 64, 64))
    assert [float(w.learning_rate(s)) for s in (0, 99, 999, 1248, 1249, 1448, 1449)] == \
        pytest.approx([0.02 * (1 / 3 + 2 / 3 / 100), 0.02, 0.02, 0.02, 0.002, 0.002, 0.0002])
    assert c.run.max_train_samples // c.data.global_batch_size == 1500
    assert c.model.mask_loss_weight == 4.0
    assert dict(c.eval.target_values) == {"BBOX": 0.53, "SEGM": 0.53}
    assert c.eval.target_values.BBOX > 0.4763 + 0.05 and c.eval.target_values.SEGM > 0.4982 + 0.03
    assert not c.eval.target_provisional
    f = config_lib.load("maskrcnn", "full", {})
    assert (f.model.fpn_channels, tuple(f.model.mask_convs)) == (256, (256,) * 4)
    assert tuple(f.schedule.decay_steps) == (60_000, 80_000)


def test_shrunk_full_config_runs_one_step_and_logs_what_the_checker_wants(tmp_path):
    """One step and one eval of the full config with the smoke's network, through the harness:
    eval_accuracy is logged as {"BBOX": .., "SEGM": ..} with epoch_num, the summary keeps BBOX
    as its quality and both in the history, and the official checker (closed_maskrcnn.yaml)
    fails the log on the quality target only. Bites: eval_accuracy logged as a float (the
    checker's "'BBOX' in v['value']" fails), a key of the yaml not logged."""
    cfg = config_lib.load("maskrcnn", "full", SHRUNK)
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "aborted" and s["steps"] == 1 and s["samples"] == 2
    h = s["quality_history"]
    assert len(h) == 1 and set(h[0]["qualities"]) == {"BBOX", "SEGM"}
    assert h[0]["quality"] == h[0]["qualities"]["BBOX"] == s["final_quality"]
    assert 0.0 <= s["final_quality"] < 0.05
    log = (tmp_path / "run" / "mlperf_log.txt").read_text().splitlines()
    acc = [json.loads(x.split(":::MLLOG ", 1)[1]) for x in log if '"eval_accuracy"' in x]
    assert len(acc) == 1 and set(acc[0]["value"]) == {"BBOX", "SEGM"}
    assert "epoch_num" in acc[0]["metadata"]
    runs.assert_log_fails_only_quality(tmp_path / "run" / "mlperf_log.txt", "0.377")


# Seed 0's curve, run (f) of configs/mini.py: all 500 eval canvases, an eval every 250 steps.
MINI_SEED0 = {"BBOX": (.084, .271, .388, .448, .463, .550),
              "SEGM": (.093, .293, .415, .463, .471, .544)}


@pytest.mark.slow
@pytest.mark.extended  # ~40-50 min on the loaded 2-core machine (2,993 s for run (e) at load 7-12)
def test_mini_reaches_both_targets_at_its_last_eval(tmp_path):
    """The mini as configured (seed 0) reaches BBOX 0.53 AND SEGM 0.53 on the 500 held-out
    canvases at step 1,500, its budget's last eval, and no earlier: the measured curve (f) of
    configs/mini.py, above the strongest trivial segmenter (ink components + nearest glyph:
    BBOX 0.4763, SEGM 0.4982). Bites (measured, by earlier runs of the same code): the decays
    back at 1,000 / 1,250 or the 32-wide FPN and mask head (seed 1: SEGM .493 at step 1,500,
    under the target: status aborted); the mask loss unweighted (SEGM .428 at step 1,349)."""
    cfg = config_lib.load("maskrcnn", "mini", {})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    h = s["quality_history"]
    assert s["status"] == "success" and s["steps"] == 1500, h
    for metric, curve in MINI_SEED0.items():
        got = [e["qualities"][metric] for e in h]
        assert got == pytest.approx(curve, abs=0.02), (metric, got)
        assert got[-1] >= 0.53 and all(q < 0.53 for q in got[:-1]), (metric, got)
    result = mllog.check_compliance(tmp_path / "run" / "mlperf_log.txt")
    assert result.valid, result.output  # open division: the mini's own targets
