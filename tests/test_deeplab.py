"""The deeplab workload: mean IoU against hand-made cases, the canvas class maps, the smoke
config through the harness (its log through the official checker), and bad input."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
from workloads.deeplab import input_pipeline, miou


def test_mean_iou_of_a_hand_made_case():
    """3 classes, 2 images written out pixel by pixel. Confusion (rows labels, columns
    predictions) summed: [[3, 1, 0], [0, 2, 1], [0, 0, 1]]; IoU 3/4, 2/4, 1/2; mean 0.5833.
    With class 2 ignored: [[3, 1], [0, 2]] plus the class-2 column's 1 from label 1 -> IoU 3/4,
    2/4, 0/1 (predicted, never labelled: counted as 0), mean 0.4167.
    Bites: rows and columns swapped in the device counts (the [0, 1] and [1, 0] cells
    trade places: IoU unchanged here, so the cells are checked), mean over all classes
    instead of those with a denominator, the ignore label counted."""
    label = np.array([[[0, 0], [1, 2]], [[0, 0], [1, 1]]], np.int32)
    pred = np.array([[[0, 1], [1, 2]], [[0, 0], [2, 1]]], np.int32)
    counts = np.asarray(miou.confusion(jnp.asarray(pred), jnp.asarray(label), 3))
    np.testing.assert_array_equal(counts.sum(0).reshape(3, 3), [[3, 1, 0], [0, 2, 1], [0, 0, 1]])
    np.testing.assert_array_equal(counts, miou.confusion_np(pred, label, 3))
    assert miou.mean_iou(counts, 3) == pytest.approx((3 / 4 + 2 / 4 + 1 / 2) / 3, abs=1e-15)
    ignored = np.asarray(miou.confusion(jnp.asarray(pred), jnp.asarray(label), 3, 2))
    np.testing.assert_array_equal(ignored, miou.confusion_np(pred, label, 3, 2))
    assert ignored.sum() == 7
    assert miou.mean_iou(ignored, 3) == pytest.approx((3 / 4 + 2 / 4 + 0) / 3, abs=1e-15)
    # a class in neither labels nor predictions is left out of the mean
    assert miou.mean_iou(miou.confusion_np(pred, label, 4), 4) == miou.mean_iou(counts, 3)


def test_mean_iou_agrees_with_brute_force_per_class_iou():
    """Random maps (8 classes, class 3 never used): the confusion-matrix mIoU equals the mean
    over classes present in labels or predictions of |P & G| / |P | G| counted with boolean
    masks over all pixels. Bites: any counting error in `confusion` or `per_class_iou`."""
    rng = np.random.default_rng(0)
    label = rng.choice([0, 1, 2, 4, 5, 6, 7], size=(5, 9, 7)).astype(np.int32)
    pred = np.where(rng.random(label.shape) < 0.6, label,
                    rng.choice([0, 1, 2, 4, 5, 6], size=label.shape)).astype(np.int32)
    counts = np.asarray(miou.confusion(jnp.asarray(pred), jnp.asarray(label), 8))
    ious = []
    for k in range(8):
        p, g = pred == k, label == k
        if (p | g).any():
            ious.append((p & g).sum() / (p | g).sum())
    assert len(ious) == 7
    assert miou.mean_iou(counts, 8) == pytest.approx(np.mean(ious), abs=1e-12)


def test_canvas_class_maps_are_the_glyph_ink_with_the_digit_class():
    """Every ink pixel (image above INK) carries a digit class 1..10 and every other pixel 0;
    the eval set is fixed. Bites: labels without the +1 (digit 0 = background), masks of the
    glyph's box instead of its ink."""
    from tpubench.datasets import canvas

    cfg = config_lib.load("deeplab", "mini")
    spec = input_pipeline.spec_of(cfg)
    ev = input_pipeline.canvas_eval_set(spec, 20)
    ink = ev["inputs"][..., 0] > canvas.INK
    np.testing.assert_array_equal(ev["label"] > 0, ink)
    assert ev["label"].max() <= 10 and set(np.unique(ev["label"][ink])) <= set(range(1, 11))
    again = input_pipeline.rows([[1_000_003, r] for r in range(20)], "test", spec)
    np.testing.assert_array_equal(again["label"], ev["label"])


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("deeplab_smoke")
    cfg = config_lib.load("deeplab", "smoke", {})
    return workdir, train.train_and_evaluate(cfg, workdir)


@pytest.mark.slow
def test_smoke_one_train_step_and_one_eval_with_a_valid_log(smoke_run):
    """The smoke config through the harness: one dispatch, one eval of 8 canvases, the first
    loss near log(11) (near-zero logits), mIoU in [0, 1], and the MLPerf log passes the
    official compliance checker's common and open-division rules (training 0.7.0
    common.yaml, open_common.yaml, run through its own ComplianceChecker) but one: its
    `submission_benchmark` must be a v0.7 training benchmark, and deeplabv3 is not (the whole
    checker then stops at its missing `open_deeplabv3.yaml`). 134 s on the loaded 2-core
    machine (load ~12), mostly compiling. Bites: the loss on logits not upsampled to the
    labels (shape error); the log without its run_stop line (checked below: more complaints)."""
    workdir, s = smoke_run
    assert s["steps"] == 1 and s["status"] == "aborted" and len(s["quality_history"]) == 1
    assert 0.0 <= s["final_quality"] <= 1.0
    metrics = [json.loads(line) for line in (workdir / "metrics.jsonl").open()]
    losses = [m["train/loss"] for m in metrics if "train/loss" in m]
    assert losses and abs(losses[0] - np.log(11)) < 0.15
    log = workdir / "mlperf_log.txt"
    messages = _common_rule_messages(log)
    assert len(messages) == 1 and "CHECK for 'submission_benchmark' failed" in messages[0]
    cut = workdir / "cut_log.txt"
    cut.write_text("".join(ln for ln in log.open() if '"run_stop"' not in ln))
    assert len(_common_rule_messages(cut)) > 1
    out = mllog.check_compliance(log).output
    assert "No such file or directory" in out and "open_deeplabv3.yaml" in out, out


def _common_rule_messages(log_path) -> list[str]:
    """The official checker's complaints about a log under its training 0.7.0 common and
    open_common rules (what `check_compliance` runs before the benchmark's own yaml)."""
    import os

    from mlperf_logging.compliance_checker import mlp_compliance, mlp_parser

    checker = mlp_compliance.make_checker("training", "0.7.0", False, False)
    loglines, errors = mlp_parser.parse_file(str(log_path), ruleset="0.7.0")
    rules = os.path.join(os.path.dirname(mlp_compliance.__file__), "training_0.7.0")
    for name in ("common.yaml", "open_common.yaml"):
        checker.configured_checks(loglines, os.path.join(rules, name))
    mlp_compliance.enqueued_configs.clear()
    return [str(e) for e in errors] + list(checker.warnings.values()) + list(
        checker.overwritable.values()) + list(checker.not_overwritable)


def test_unknown_source_and_missing_checkpoint_are_usage_errors(tmp_path):
    """Bites: an unknown data source accepted until the first batch; a missing checkpoint
    path silently ignored (random weights served)."""
    with pytest.raises(UsageError, match="canvas"):
        registry.create(config_lib.load("deeplab", "smoke", {"data.source": "cityscapes"}))
    cfg = config_lib.load("deeplab", "smoke", {"model.checkpoint": str(tmp_path / "no.pb")})
    with pytest.raises(UsageError, match="do not exist"):  # raised while tracing init
        jax.eval_shape(registry.create(cfg).init, jax.random.key(0))


@pytest.mark.slow
@pytest.mark.extended
def test_mini_reaches_its_target_within_its_schedule(tmp_path):
    """The mini (seed 0) reaches mIoU 0.55 (above the 1-NN baseline 0.5172) within its 1,500
    steps: measured at step 1,250 (config docstring). Bites: the old output stride 16 / lr 2e-3
    (0.2019 at step 1,500). ~25 minutes on the loaded 2-core machine."""
    cfg = config_lib.load("deeplab", "mini", {})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "success" and s["final_quality"] >= 0.55, s["quality_history"]
    assert s["steps"] <= 1500
