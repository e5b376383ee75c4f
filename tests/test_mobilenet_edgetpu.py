"""MobileNetEdgeTPU (`workloads/resnet/mobilenet_edgetpu.py`) checked abstractly at full size
against the published model (TF-slim `mobilenet_v3.V3_EDGETPU`; the tensorflow/models
mobilenet README: 990 M MACs, 4.0 M parameters), and its blocks' structure."""

from __future__ import annotations

import json

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
from workloads.resnet.mobilenet_edgetpu import EDGETPU_PLAN, MobileNetEdgeTPU


def _abstract(model, size=224, channels=3):
    x = jax.ShapeDtypeStruct((1, size, size, channels), jnp.float32)
    variables = jax.eval_shape(lambda: model.init(jax.random.key(0), jnp.zeros(x.shape),
                                                  train=False))
    return nn.unbox(variables), x


def _count(tree) -> int:
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(tree))


def _count_from_the_table() -> tuple[int, int]:
    """(conv + logits weights, batch-norm channels) written out from the V3_EDGETPU table:
    stem 3x3x3x32; fused block: k x k x in x (t*in) expansion when t > 1, 1x1 projection;
    depthwise block: 1x1 expansion, k x k depthwise, 1x1 projection; 1x1 to 1280; logits
    1280 x 1001 + 1001 biases."""
    weights, bn, cin = 27 * 32, 32, 32
    for fused, t, c, _s, k, _r in EDGETPU_PLAN:
        inner = cin * t
        if inner > cin:
            weights += (k * k if fused else 1) * cin * inner
            bn += inner
        if not fused:
            weights += k * k * inner
            bn += inner
        weights += inner * c
        bn += c
        cin = c
    weights += cin * 1280 + 1280 * 1001 + 1001
    return weights, bn + 1280


def test_full_size_parameter_count_matches_the_published_model():
    """4,053,833 conv/logit weights (the published '4.0 M' counts no batch-norm parameters: its
    MobileNetV2 row, 3.47 M, is Keras's 3,504,872 trainable minus 34,112 BN scales and offsets)
    + 38,880 BN scales and offsets = 4,092,713.
    Bites: a fused block with a 1x1 expansion (as an ordinary inverted bottleneck), or the
    5x5 depthwise stage at 3x3, or a first block that expands at t = 1."""
    variables, _ = _abstract(MobileNetEdgeTPU())
    weights, bn_channels = _count_from_the_table()
    assert (weights, bn_channels) == (4_053_833, 19_440)
    assert _count(variables["params"]) == weights + 2 * bn_channels == 4_092_713
    assert _count(variables["batch_stats"]) == 2 * bn_channels
    assert round(weights / 1e6, 1) in (4.0, 4.1) and abs(weights / 1e6 - 4.0) < 0.06
    params = variables["params"]
    assert set(params["block1"]) == {"project"}  # t = 1: the projection alone
    assert params["block2"]["expand"]["conv"]["kernel"].shape == (3, 3, 16, 128)  # fused 3x3
    assert "depthwise" not in params["block9"]
    assert params["block10"]["depthwise"]["conv"]["kernel"].shape == (3, 3, 1, 384)
    assert params["block18"]["depthwise"]["conv"]["kernel"].shape == (5, 5, 1, 768)
    assert params["logits"]["kernel"].shape == (1280, 1001)


def test_full_size_flops_from_xla_cost_analysis():
    """1.962 GFLOP per 224x224 image = 981 M multiply-adds, within 1% of the published 990 M
    (which counts a few more ops than XLA's 2 x MAC convolutions).
    Bites: stride 1 in the stem (about 4x the FLOPs), a missing 5x5 stage."""
    model = MobileNetEdgeTPU()
    variables, x = _abstract(model)
    lowered = jax.jit(lambda v, x: model.apply(v, x, train=False)).lower(variables, x)
    flops = lowered.cost_analysis()["flops"]
    assert 1.95e9 < flops < 1.97e9
    assert abs(flops / 2 / 990e6 - 1) < 0.01


@pytest.mark.slow
def test_the_no_residual_block_has_no_shortcut_and_its_neighbours_have_one():
    """V3_EDGETPU's 14th block (t = 8, 96 -> 96, stride 1) is `residual=False`: with its
    projection's batch norm zeroed its output is zero, while block 13's (same shapes, residual)
    is its input. Bites: ignoring `residual` (block 14's output would equal its input).
    (84 s on the loaded 2-core machine: compiling 14 blocks.)"""
    model = MobileNetEdgeTPU(num_classes=10, width=0.25, blocks=14)
    x = jax.random.normal(jax.random.key(1), (1, 16, 16, 3))
    variables = jax.jit(lambda x: model.init(jax.random.key(0), x, train=False))(x)
    params = jax.tree.map(lambda a: a, nn.unbox(variables["params"]))
    for block in ("block13", "block14"):
        bn = params[block]["project"]["bn"]
        params[block]["project"]["bn"] = jax.tree.map(jnp.zeros_like, bn)
    _, inter = jax.jit(lambda p, x: model.apply(
        {"params": p, "batch_stats": variables["batch_stats"]}, x, train=False,
        capture_intermediates=True))(params, x)
    out = {b: inter["intermediates"][b]["__call__"][0][0] for b in
           ("block12", "block13", "block14")}
    assert float(jnp.abs(out["block14"]).max()) == 0.0
    assert float(jnp.abs(out["block12"]).max()) > 0
    np.testing.assert_array_equal(np.asarray(out["block13"]), np.asarray(out["block12"]))


def test_the_1001_class_config_predicts_label_minus_the_background_class():
    """The TF checkpoint's class 0 is the background: `label_offset` 1 maps logit k to label
    k - 1 (and the served config is the mobile benchmark's, SingleStream and Offline only).
    Bites: argmax without the offset (every ImageNet prediction one class off)."""
    from tpubench.infer.spec import inference_spec

    workload = registry.create(config_lib.load("resnet", "mobilenet_edgetpu", {}))
    logits = jnp.zeros((2, 1001)).at[0, 1].set(5.0).at[1, 1000].set(5.0)
    assert workload.predict(logits).tolist() == [0, 999]
    spec = inference_spec(workload)
    assert spec.mlperf_name == "mobilenet-edgetpu" and spec.scenarios == ("SingleStream",
                                                                           "Offline")
    assert abs(spec.quality_target - 0.98 * 0.7619) < 1e-12
    assert spec.benchmark_model_and_data is True


@pytest.mark.slow
def test_smoke_one_train_and_one_eval_step_starts_from_log_10(tmp_path):
    """The smoke config (3 blocks, width 0.25, synthetic 32x32x3 images) through the harness:
    one train dispatch and one eval, and the near-zero logits start at loss ~log(10) (2.274
    measured). 125 s on the loaded 2-core machine (load average ~15), mostly compiling.
    Bites: the workload ignoring `model.arch` (the ResNet's params would be trained)."""
    cfg = config_lib.load("resnet", "mobilenet_edgetpu_smoke", {})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["steps"] == 1 and s["status"] == "aborted" and len(s["quality_history"]) == 1
    workload = registry.create(cfg)
    params, _ = workload.init(jax.random.key(0))
    assert set(nn.unbox(params)) == {"stem", "block1", "block2", "block3", "conv_last", "logits"}
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    losses = [m["train/loss"] for m in metrics if "train/loss" in m]
    assert losses and abs(losses[0] - np.log(10)) < 0.05


# The eval step at which the mini first reaches its 0.976 target, per seed (curves in
# configs/mobilenet_edgetpu_mini.py: epoch 12 for both; 11 with lr x (1 + 1e-6)); evals every
# 125 steps.
MINI_TARGET_STEP = {0: 1500, 1: 1500}
MINI_EVAL_EVERY = 125


@pytest.mark.slow
# Both seeds with --extended (seed 0 took 208 s; suite budget ~25 min on 2 cores). The default run
# trains this mini 500 steps and checks it learned (> 0.8, chance 0.1) in
# tests/test_infer_mobilenet_edgetpu.py; the ResNet mini proves convergence to target.
@pytest.mark.extended
@pytest.mark.parametrize("seed", [0, 1])
def test_mini_reaches_its_target_at_the_measured_step(tmp_path, seed):
    """A step budget of one eval past the measured step (no wall-clock budget); the log passes
    the official compliance checker. Bites: the old 0.970 target would stop seed 0 at step
    1,375 (an eval early: .971); one above the plateau never stops."""
    budget = MINI_TARGET_STEP[seed] + MINI_EVAL_EVERY
    cfg = config_lib.load("resnet", "mobilenet_edgetpu_mini",
                          {"run.seed": seed, "run.max_train_samples": budget * 32})
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "success", s["quality_history"]
    assert s["final_quality"] >= s["target"] == 0.976
    assert abs(s["steps"] - MINI_TARGET_STEP[seed]) <= MINI_EVAL_EVERY, s["steps"]
    result = mllog.check_compliance(tmp_path / "run" / "mlperf_log.txt")
    assert result.valid, result.output
