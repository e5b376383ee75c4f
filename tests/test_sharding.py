"""Sharding strategies chosen by config alone, on 8 simulated CPU devices (one subprocess runs
them all: tests/scale_worker.py), plus steps-per-dispatch invariance in this process.

Each strategy trains a cut-down ResNet (the real workload code) for 3 steps on the same fixed
batches; the losses must match the 1-device run, and the parameter and LARS momentum shardings
must be the configured ones.
"""

import jax
import numpy as np
import pytest
import scale_worker as worker  # tests/ is on sys.path: the subprocess side, same constants

LOSS_RTOL = 1e-5


@pytest.fixture(scope="module")
def runs():
    return worker.run_in_subprocess(8, "strategies")


def test_data_parallel_replicates_params_and_momentum(runs):
    run = runs["data"]
    assert run["mesh"] == {"data": 8, "fsdp": 1, "tensor": 1}
    for leaf in ("kernel", "kernel_momentum"):
        assert run[leaf]["devices"] == 8
        assert run[leaf]["shard_shape"] == [3, 3, 32, 32]  # every device holds all of it


def test_fsdp_shards_kernel_and_its_momentum_over_fsdp(runs):
    run = runs["fsdp"]
    assert run["mesh"] == {"data": 1, "fsdp": 8, "tensor": 1}
    for leaf in ("kernel", "kernel_momentum"):
        assert run[leaf]["spec"] == [None, None, "fsdp", "tensor"]
        assert run[leaf]["shard_shape"] == [3, 3, 4, 32]  # conv_in 32 split 8 ways
    for leaf in ("bn_scale", "bn_scale_momentum"):  # below fsdp_min_size: replicated
        assert run[leaf]["spec"] == []
        assert run[leaf]["shard_shape"] == [32]


def test_mixed_mesh_shards_kernel_over_fsdp_and_tensor(runs):
    run = runs["mixed"]
    assert run["mesh"] == {"data": 2, "fsdp": 2, "tensor": 2}
    for leaf in ("kernel", "kernel_momentum"):
        # conv_out goes to "tensor" by the logical-axis rules, the largest free dim to "fsdp".
        assert run[leaf]["spec"] == [None, None, "fsdp", "tensor"]
        assert run[leaf]["shard_shape"] == [3, 3, 16, 16]


@pytest.mark.parametrize("strategy", ["data", "fsdp", "mixed"])
def test_strategy_trains_like_one_device(runs, strategy):
    single, run = runs["single"], runs[strategy]
    np.testing.assert_allclose(run["losses"], single["losses"], rtol=LOSS_RTOL)
    np.testing.assert_allclose(run["kernel_sum"], single["kernel_sum"], rtol=1e-4)
    assert run["kernel_sum"] != runs["data_bn2"]["kernel_sum"]  # the comparison can fail


def test_pmap_equals_jit_with_bn_span_of_the_per_device_batch(runs):
    """pmap normalises per device (2 examples here); jit with model_bn_span=2 on the global
    batch must give the same losses and, as pmap's pmean, the mean of the group statistics."""
    pmap, grouped = runs["pmap"], runs["data_bn2"]
    assert pmap["kernel"]["shard_shape"] == [1, 3, 3, 32, 32]  # one replica per device
    np.testing.assert_allclose(pmap["losses"], grouped["losses"], rtol=LOSS_RTOL)
    np.testing.assert_allclose(pmap["bn_mean"], grouped["bn_mean"], rtol=1e-4, atol=1e-6)
    # ... and the span matters: whole-batch statistics give other losses.
    assert np.max(np.abs(np.subtract(grouped["losses"], runs["single"]["losses"]))) > 1e-4


def test_steps_per_dispatch_does_not_change_training():
    """4 steps as four 1-step dispatches or one 4-step lax.scan block: the same params."""
    from tpubench import config as config_lib
    from tpubench import engine as engine_lib
    from tpubench import mesh as mesh_lib
    from tpubench import registry

    cfg = config_lib.load("resnet", "smoke", worker.BASE)
    eng = engine_lib.JitEngine(registry.create(cfg), mesh_lib.build_mesh(cfg))
    host = worker.batches(4, cfg.global_batch_size)
    finals = []
    for k in (1, 4):
        train = eng.compile(k, synthetic=False).train
        state = eng.init_state(cfg.seed)
        with eng.context():
            for i in range(0, 4, k):
                block = {key: np.stack([b[key] for b in host[i:i + k]]) for key in host[0]}
                state, _ = train(state, eng.put(block, stacked=True))
        finals.append(jax.device_get(state))
    assert int(finals[0].step) == int(finals[1].step) == 4
    moved = jax.tree.leaves(jax.tree.map(
        lambda a, b: float(np.abs(a - b).max()), finals[0].params, eng.init_state(0).params))
    assert max(moved) > 1e-3  # the params did train
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 finals[0].params, finals[1].params)
