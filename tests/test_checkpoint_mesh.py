"""A checkpoint restores onto another mesh: saved by a data-parallel smoke ResNet on 8 devices,
restored FSDP on 4 devices in another process, equal to the state that was SAVED (every leaf:
params, LARS momentum, batch-norm statistics, step, RNG key; exact on CPU)."""

import scale_worker as worker  # tests/ is on sys.path

GROUPS = ("step", "params", "opt_state", "model_state", "rng")


def test_data_parallel_checkpoint_restores_fsdp_on_fewer_devices_equal_to_the_saved_state(
        tmp_path):
    """Bites: `checkpoint.save` writing the batch-norm statistics as ones fails `different` (18
    leaves); the previous test (params of a restore vs a restore) passed with it."""
    workdir = str(tmp_path / "run")
    saved = worker.run_in_subprocess(8, "save", workdir)
    assert saved["mesh"] == {"data": 8, "fsdp": 1, "tensor": 1}
    assert saved["saved_kernel"]["shard_shape"] == [3, 3, 32, 32]  # replicated when saved
    leaves = saved["leaves"]
    assert leaves["step"] == leaves["rng"] == 1
    assert leaves["params"] > 10 and leaves["opt_state"] >= leaves["params"]
    assert leaves["model_state"] > 4  # batch-norm means and variances
    # Control: training moved every group but the RNG key (the run's base key, never split),
    # so comparing with the saved state compares trained values, not initial ones.
    moved = saved["moved"]
    assert moved["step"] == 1 and moved["rng"] == 0
    assert moved["params"] == leaves["params"]
    assert moved["model_state"] == leaves["model_state"]
    assert moved["opt_state"] >= leaves["params"]  # every momentum trace

    restored = worker.run_in_subprocess(4, "restore", workdir)
    assert restored["mesh"] == {"data": 1, "fsdp": 4, "tensor": 1}
    for leaf in ("kernel", "kernel_momentum"):
        assert restored[leaf]["spec"] == [None, None, "fsdp", "tensor"]
        assert restored[leaf]["shard_shape"] == [3, 3, 8, 32]  # conv_in 32 split 4 ways
    assert restored["leaves"] == leaves
    assert restored["missing"] == restored["extra"] == []
    assert restored["different"] == []
    assert restored["step"] == worker.SAVED_STEPS
    assert restored["progress"] == {"train_s": 1.5, "attempts": 1, "eval_s": 0.0, "init_s": 0.0,
                                    "input_start_s": 0.0, "run_start_unix": None,
                                    "cache_clear": False,
                                    "history": [{"samples": 48, "quality": 0.25}]}
