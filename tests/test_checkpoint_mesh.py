"""A checkpoint restores onto another mesh: saved by a data-parallel smoke ResNet run on 8
devices, restored FSDP on 4 devices in another process, with the same values."""

import scale_worker as worker  # tests/ is on sys.path


def test_data_parallel_checkpoint_restores_fsdp_on_fewer_devices(tmp_path):
    workdir = str(tmp_path / "run")
    saved = worker.run_in_subprocess(8, "save", workdir)
    assert saved["mesh"] == {"data": 8, "fsdp": 1, "tensor": 1}
    assert saved["saved_kernel"]["shard_shape"] == [3, 3, 32, 32]  # replicated when saved
    assert saved["steps"] == saved["progress_step"] == 2

    restored = worker.run_in_subprocess(4, "restore", workdir)
    assert restored["mesh"] == {"data": 1, "fsdp": 4, "tensor": 1}
    for leaf in ("kernel", "kernel_momentum"):
        assert restored[leaf]["spec"] == [None, None, "fsdp", "tensor"]
        assert restored[leaf]["shard_shape"] == [3, 3, 8, 32]  # conv_in 32 split 4 ways
    assert restored["same_keys"] and restored["params"] > 10
    assert restored["max_abs_diff"] == 0.0
    assert restored["step"] == restored["progress_step"] == 2
