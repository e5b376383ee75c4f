"""ResNet-50 v1.5: the full model's size, the smoke steps on every data source, and the mini
time-to-quality run with its MLPerf log, checked by the official compliance checker."""

from __future__ import annotations

import math
from unittest import mock

import jax
import numpy as np
import pytest
import runs

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import steps
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
from tpubench.platform import perf


def _workload(name: str, **overrides):
    return registry.create(config_lib.load("resnet", name, overrides))


def test_full_resnet50_has_exactly_25557032_parameters():
    assert steps.param_count(_workload("full")) == 25_557_032


def test_full_resnet50_train_step_costs_about_24_gflop_per_image():
    w = _workload("full", **{"data.global_batch_size": 2, "model.dtype": "float32"})
    state = steps.abstract_state(w)
    batch = w.batch_spec(2, train=True)
    flops = perf.flops_of(jax.jit(steps.make_train_step(w)).lower(state, batch))
    # Forward ~4.1 GMAC = 8.2 GFLOP per 224x224 image; a train step is ~3x that.
    assert 21e9 < flops / 2 < 27e9


def test_lars_schedule_warms_up_linearly_then_decays_to_end_lr():
    """The reference's 33 warmup / 88 decay epochs become steps at 20 steps per epoch (1,281,167
    images at batch 65,536), and the MLPerf log gets the epochs back.
    Bites: steps_for_epochs flooring the steps per epoch (19: warmup 627 steps)."""
    w = _workload("full")
    c = w.config
    spe = math.ceil(c.data.train_samples / c.data.global_batch_size)
    assert spe == 20
    warmup, total = c.schedule.warmup_steps, c.schedule.train_steps
    assert (warmup, total) == (33 * spe, 88 * spe)
    logged = w.mllog_hyperparameters()
    assert logged["lars_opt_learning_rate_warmup_epochs"] == 33.0
    assert logged["lars_opt_learning_rate_decay_steps"] == (88 - 33) * spe
    lr = w.learning_rate
    assert float(lr(0)) == 0.0
    assert float(lr(warmup // 2)) == pytest.approx(c.optimizer.learning_rate / 2, rel=0.02)
    assert float(lr(warmup)) == pytest.approx(c.optimizer.learning_rate, rel=1e-4)
    assert float(lr(total)) == pytest.approx(1e-4, rel=1e-3)


def _hand_top1(workdir, cfg) -> float:
    """Top-1 of a finished run's checkpoint on the synthetic eval batches, computed here with
    the model's own apply (not the workload's eval_step / eval_finalize)."""
    from tpubench.loops import checkpoint
    from tpubench.loops import feed as data

    w = registry.create(cfg)
    params, model_state = checkpoint.restore_variables(workdir, w)
    correct = count = 0
    batches = math.ceil(w.eval_samples / cfg.eval.batch_size)
    for b in data.synthetic_eval_batches(w, batches, 1):
        logits = w.model().apply({"params": params, **model_state}, b["inputs"], train=False)
        keep = np.asarray(b["mask"]) > 0
        correct += int(((np.argmax(logits, -1) == b["label"]) & keep).sum())
        count += int(keep.sum())
    return correct / count


def test_smoke_one_train_and_one_eval_step_on_synthetic_data(tmp_path):
    """The reported quality is the top-1 of the saved parameters, recomputed by hand.

    Bites: eval_finalize dividing by count + 1 made the reported top-1 differ from the hand
    one."""
    cfg = config_lib.load("resnet", "smoke")
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "aborted"  # budget of one step, target out of reach
    assert s["steps"] == 1 and s["samples"] == 8
    assert len(s["quality_history"]) == 1
    assert s["final_quality"] == pytest.approx(_hand_top1(tmp_path / "run", cfg), abs=1e-9)
    assert s["flops_per_step"] > 0 and 0.0 < s["mfu"] < 1.0
    for key in ("workload", "config", "status", "target", "final_quality", "time_to_target_s",
                "init_s", "train_examples_per_s", "mfu", "steps", "seed", "resumed"):
        assert key in s
    assert s["config"] == "smoke" and s["resumed"] is False


def test_initial_loss_is_log_10_and_steps_on_one_real_batch_lower_it():
    """At init the last batch-norm gamma of every block is 0 and the classifier is N(0, 0.01),
    so the logits are ~0 and the loss is log(10); 15 LARS steps on one real batch of 32 MNIST
    digits (no warmup) must lower it at every step after the first.

    Measured: 2.2956 at step 0, 1.9505 at step 14 (seed 0). Bites: negating the optimizer's
    update (gradient ascent) made the loss rise from 2.296 to above 10 within 8 steps."""
    from flax import linen as nn

    w = _workload("mini", **{"schedule.warmup_steps": 0})
    batch = next(w.train_batches(0, 0, 1))
    state = jax.jit(lambda r: nn.meta.unbox(steps.boxed_init_fn(w)(r)))(jax.random.PRNGKey(0))
    step = jax.jit(steps.make_train_step(w))
    losses = []
    for _ in range(15):
        state, metrics = step(state, batch)
        losses.append(float(metrics["loss"]))
    assert losses[0] == pytest.approx(math.log(10), abs=0.01)
    assert all(b < a for a, b in zip(losses[1:], losses[2:], strict=False)), losses
    assert losses[-1] < 0.9 * losses[0], losses


def test_smoke_step_through_the_real_tfds_imagenet_pipeline_on_mock_data(tmp_path):
    import tensorflow_datasets as tfds

    cfg = config_lib.load("resnet", "smoke",
                          {"data.source": "tfds", "data.dataset": "imagenet2012"})
    # mock_data fakes a prepared dataset but does not patch is_prepared(), which check_data uses.
    with tfds.testing.mock_data(num_examples=12), mock.patch.object(
            tfds.core.DatasetBuilder, "is_prepared", return_value=True):
        s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["steps"] == 1 and s["data_source"] == "tfds"
    assert len(s["quality_history"]) == 1


def test_uint8_pixels_are_normalised_on_device_exactly_as_the_host_did():
    """Issue 17.2: the full config feeds uint8 (a quarter of float32's bytes) and the model
    normalises; its logits equal the model's on the host-normalised float images.
    Bites: normalising by the mean only, or feeding uint8 unnormalised (logits differ)."""
    from workloads.resnet import input_pipeline
    from workloads.resnet import model as resnet_model

    w = _workload("full", **{"model.dtype": "float32"})
    assert w.batch_spec(2, train=True)["inputs"].dtype == np.uint8
    assert w.synthetic_batch(jax.random.PRNGKey(0), 2)["inputs"].dtype == np.uint8
    m = resnet_model.ResNet(stage_sizes=(1,), num_filters=8, num_classes=5, stem="small")
    pixels = np.random.default_rng(0).integers(0, 256, (2, 8, 8, 3)).astype(np.uint8)
    host = (pixels.astype(np.float32) - input_pipeline.MEAN_RGB) / input_pipeline.STDDEV_RGB
    variables = m.init(jax.random.PRNGKey(0), host, train=False)
    np.testing.assert_allclose(np.asarray(m.apply(variables, pixels, train=False)),
                               np.asarray(m.apply(variables, host, train=False)), rtol=1e-6,
                               atol=1e-6)


def test_tfds_pipeline_feeds_uint8_pixels_that_round_the_float_ones(tmp_path):
    """The same mock ImageNet examples through both settings of `data.uint8_pixels`: uint8
    batches whose normalised values are the float batch's to within the rounding (0.5/255 of a
    pixel) wherever the resize stayed inside 0..255, and a train step through the uint8 path.
    Bites: a pipeline that casts without rounding (truncation: errors up to 1/255)."""
    import tensorflow_datasets as tfds

    from workloads.resnet import input_pipeline

    def first_batch(uint8):
        cfg = config_lib.load("resnet", "smoke", {"data.source": "tfds",
                                                  "data.dataset": "imagenet2012",
                                                  "data.uint8_pixels": uint8})
        with tfds.testing.mock_data(num_examples=12), mock.patch.object(
                tfds.core.DatasetBuilder, "is_prepared", return_value=True):
            return next(input_pipeline.imagenet_eval(cfg, 0, 1))

    as_float, as_uint8 = first_batch(False), first_batch(True)
    assert as_uint8["inputs"].dtype == np.uint8 and as_float["inputs"].dtype == np.float32
    np.testing.assert_array_equal(as_uint8["label"], as_float["label"])
    pixels_float = as_float["inputs"] * input_pipeline.STDDEV_RGB + input_pipeline.MEAN_RGB
    inside = (pixels_float > 0.5) & (pixels_float < 254.5)
    assert inside.mean() > 0.5  # most pixels are compared
    error = np.abs(as_uint8["inputs"].astype(np.float32) - pixels_float)[inside]
    assert error.max() <= 0.5 + 1e-3, error.max()

    cfg = config_lib.load("resnet", "smoke", {"data.source": "tfds",
                                              "data.dataset": "imagenet2012",
                                              "data.uint8_pixels": True})
    with tfds.testing.mock_data(num_examples=12), mock.patch.object(
            tfds.core.DatasetBuilder, "is_prepared", return_value=True):
        s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["steps"] == 1 and len(s["quality_history"]) == 1


def test_pmap_path_runs_the_same_workload(tmp_path):
    cfg = config_lib.load("resnet", "smoke", {"run.parallelism": "pmap"})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["parallelism"] == "pmap" and s["steps"] == 1


def test_nan_loss_stops_the_run_with_a_clear_message(tmp_path):
    cfg = config_lib.load("resnet", "smoke",
                          {"run.max_train_samples": 24, "eval.every_samples": 24})
    cfg.optimizer.learning_rate = float("nan")
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "aborted"
    assert "NaN/Inf" in s["error"] and "learning rate" in s["error"]
    assert s["quality_history"] == []  # stopped before evaluating garbage


# ---- the mini's data: the random shift, the sizes, the refusals --------------------------------
def test_shift_images_moves_each_image_by_its_own_offset_and_pads_with_the_edge():
    from workloads.resnet import input_pipeline

    images = np.arange(2 * 4 * 5, dtype=np.float32).reshape(2, 4, 5, 1)
    out = input_pipeline.shift_images(images, np.array([1, 0]), np.array([0, -1]), 1)
    # image 0 moved down one row: row 0 repeats the edge row, rows 1-3 are rows 0-2
    np.testing.assert_array_equal(out[0, 1:], images[0, :-1])
    np.testing.assert_array_equal(out[0, 0], images[0, 0])
    # image 1 moved left one column: columns 0-3 are columns 1-4, column 4 repeats the edge
    np.testing.assert_array_equal(out[1, :, :-1], images[1, :, 1:])
    np.testing.assert_array_equal(out[1, :, -1], images[1, :, -1])


def _mini_train(overrides, start_step=0, process_index=0, process_count=1, n=3):
    from workloads.resnet import input_pipeline

    cfg = config_lib.load("resnet", "mini", overrides)
    stream = input_pipeline.mnist5k_train(cfg, start_step, process_index, process_count)
    return [next(stream) for _ in range(n)]


def test_mini_shifts_are_drawn_from_seed_and_step_for_the_global_batch():
    """The mini's train images are its unshifted ones moved by -1..1 pixels; the same (seed,
    step) gives the same batch after a resume and on any process count (each process slices
    the global batch's shifts); another seed gives other shifts.
    Bites: shifts drawn from a stream that restarts at the resume step (the resumed batch
    differs), or per process (the two halves differ from the one-process batch)."""
    shifted = _mini_train({})
    plain = _mini_train({"data.random_shift_pixels": 0})
    for a, b in zip(shifted, plain, strict=True):
        np.testing.assert_array_equal(a["label"], b["label"])
        moved = [not np.array_equal(x, y) for x, y in zip(a["inputs"], b["inputs"], strict=True)]
        assert 0 < sum(moved) < len(moved)  # 8 of 9 offsets move an image; (0, 0) does not
    resumed = _mini_train({}, start_step=2, n=1)[0]
    np.testing.assert_array_equal(resumed["inputs"], shifted[2]["inputs"])
    halves = [_mini_train({}, 1, p, 2, n=1)[0]["inputs"] for p in (0, 1)]
    np.testing.assert_array_equal(np.concatenate(halves), shifted[1]["inputs"])
    other = _mini_train({"run.seed": 1}, n=1)[0]
    again = _mini_train({"run.seed": 1, "data.random_shift_pixels": 0}, n=1)[0]
    assert not np.array_equal(other["inputs"], again["inputs"])


@pytest.mark.parametrize("overrides, words", [
    ({"data.image_size": 20}, "MNIST-5k comes at 28x28"),
    ({"data.source": "tfds", "data.dataset": "imagenet2012"}, "random_shift_pixels=1 applies"),
])
def test_mini_data_refusals_say_how_to_fix_them(overrides, words):
    """A size MNIST-5k does not come in, and the shift on ImageNet (whose augmentation is the
    random-resized crop), are refused before any compute with the fix."""
    from tpubench.errors import UsageError

    w = registry.create(config_lib.load("resnet", "mini", overrides))
    with pytest.raises(UsageError, match=words):
        w.check_data()


def test_mini_at_28x28_reads_the_digits_as_shipped():
    from workloads.resnet import input_pipeline

    full_res = input_pipeline.load_mnist5k(28)
    pooled = input_pipeline.load_mnist5k(14)
    assert full_res["train"]["inputs"].shape == (4000, 28, 28, 1)
    x = full_res["train"]["inputs"].reshape(4000, 14, 2, 14, 2, 1).mean(axis=(2, 4))
    np.testing.assert_allclose(x, pooled["train"]["inputs"], atol=1e-6)
    np.testing.assert_array_equal(full_res["test"]["label"], pooled["test"]["label"])


# ---- the mini: time to quality, compliance, no overwrite, preemption --------------------------
# The mini's first eval at or above its 0.976 target, seeds 0-4, on a 2-core Intel Xeon
# (configs/mini.py): steps 1,625 1,500 1,250 1,500 1,500, and with lr x (1 + 1e-6) 1,500 1,500
# 1,750 1,375 1,625. Step counts are per machine, so the tests ask for the target at an eval
# within the 3,000-step budget, not at a step.
MINI_TARGET = 0.976
MINI_EVAL_EVERY = 125
MINI_BUDGET_STEPS = 3000


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("mini") / "run"
    proc = runs.run_main("resnet", "mini", workdir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return workdir


@pytest.mark.slow
def test_mini_reaches_its_target_and_says_so(mini_run):
    """Seed 0 reaches 0.976 top-1 at an eval within the 3,000-step budget.

    Counter-cases measured (configs/mini.py): the same mini with 16 filters plateaus at
    0.971-0.980 and the previous mini (16 filters, no shift) at 0.969-0.974; a seed of either
    may end its budget below 0.976 and fail here."""
    s = runs.summary(mini_run)
    assert s["status"] == "success" and s["seed"] == 0
    assert s["final_quality"] >= s["target"] == MINI_TARGET
    assert s["steps"] % MINI_EVAL_EVERY == 0 and s["steps"] <= MINI_BUDGET_STEPS, s["steps"]
    assert s["time_to_target_s"] == pytest.approx(s["run_time_s"])
    assert s["is_mlperf"] is False and s["dataset"] == "mnist5k"
    assert s["quality_history"][-1]["quality"] == s["final_quality"]
    assert all(h["quality"] < MINI_TARGET for h in s["quality_history"][:-1])


@pytest.mark.slow
@pytest.mark.extended  # the default run keeps seed 0 (suite budget ~25 min on 2 cores)
def test_mini_reaches_its_target_at_the_measured_step_on_a_second_seed(tmp_path):
    """Seed 1 within the config's own 3,000-step budget (no wall-clock budget)."""
    cfg = config_lib.load("resnet", "mini", {"run.seed": 1})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "success", s["quality_history"]
    assert s["steps"] % MINI_EVAL_EVERY == 0 and s["steps"] <= MINI_BUDGET_STEPS, s["steps"]


@pytest.mark.slow
def test_mini_log_passes_the_official_compliance_checker(mini_run):
    result = mllog.check_compliance(mini_run / "mlperf_log.txt")
    assert result.valid, result.output
    log = (mini_run / "mlperf_log.txt").read_text()
    assert '"submission_division", "value": "open"' in log  # never passes for closed MLPerf
    assert "mini-mnist5k" in log  # the platform names the config and dataset


@pytest.mark.slow
def test_a_finished_run_is_never_overwritten(mini_run):
    before = (mini_run / "summary.json").read_bytes()
    proc = runs.run_main("resnet", "mini", mini_run)
    assert proc.returncode == 2
    assert "already holds a finished run" in proc.stderr and "new --workdir" in proc.stderr
    assert (mini_run / "summary.json").read_bytes() == before


# SIGTERM and resume: tests/test_timing.py (every phase; the resumed state equals the
# uninterrupted run's exactly).


def test_full_config_log_fails_only_the_quality_target(tmp_path):
    # The full config's optimizer and logged hyperparameters, one synthetic step. The network is
    # shrunk to keep CI fast: the log does not depend on it, and the full-size model is checked
    # abstractly above (parameter count, FLOPs) and by `tpubench fit`.
    cfg = config_lib.load("resnet", "full", {
        "data.source": "synthetic", "data.global_batch_size": 4, "eval.batch_size": 4,
        "eval.samples": 4, "eval.every_samples": 4, "run.max_train_samples": 4,
        "run.steps_per_dispatch": 1, "model.dtype": "float32", "data.image_size": 32,
        "model.stage_sizes": (1, 1, 1, 1), "model.num_filters": 8})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "aborted"
    runs.assert_log_fails_only_quality(tmp_path / "run" / "mlperf_log.txt", "0.7590")
