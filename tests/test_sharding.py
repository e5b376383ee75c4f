"""Sharding strategies chosen by config alone, on 8 simulated CPU devices (one subprocess runs
them all: tests/scale_worker.py), plus steps-per-dispatch invariance in this process.

Each strategy trains a cut-down ResNet (the real workload code) for 3 steps on the same fixed
batches; the losses must match the 1-device run, and the parameter and LARS momentum shardings
must be the configured ones.
"""

import re

import jax
import numpy as np
import pytest
import scale_worker as worker  # tests/ is on sys.path: the subprocess side, same constants
from jax.sharding import PartitionSpec as P

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


@pytest.mark.parametrize(("strategy", "ways"), [("data", 8), ("fsdp", 8), ("mixed", 4)])
def test_the_input_batch_is_split_over_every_batch_axis(runs, strategy, ways):
    """The K-step input block [K, B, ...] is split on its example axis over both batch axes
    ('data', 'fsdp': tpubench/mesh.py BATCH_AXES) and replicated over 'tensor': each device holds
    B / (data x fsdp) rows, every row slice held by `tensor` devices. Losses alone cannot tell
    (a batch replicated over fsdp trains the same). Bites: BATCH_AXES = ("data",) or a
    batch_sharding without the fsdp axis (mixed: 8 rows per device instead of 4; fsdp: 16)."""
    batch = runs[strategy]["batch"]
    assert batch["spec"] == [None, ["data", "fsdp"]]
    per_device = worker.BASE["data.global_batch_size"] // ways
    assert batch["row_slices"] == [[i, i + per_device] for i in range(0, ways * per_device,
                                                                       per_device)]
    assert batch["holders"] == [8 // ways]  # mixed: each slice on its 2 tensor devices


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
    from tpubench import mesh as mesh_lib
    from tpubench import registry
    from tpubench.loops import engine as engine_lib

    cfg = config_lib.load("resnet", "smoke", worker.BASE)
    eng = engine_lib.JitEngine(registry.create(cfg), mesh_lib.build_mesh(cfg))
    host = worker.batches(4, cfg.data.global_batch_size)
    finals = []
    for k in (1, 4):
        train = eng.compile(k, synthetic=False).train
        state = eng.init_state(cfg.run.seed)
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


# ---- logical-axis vocabulary: generic names in the harness, the rest in each workload ------------

def _logical_names_by_workload() -> dict[str, set[str]]:
    """The logical axis names each workload's smoke-config params use (shapes only)."""
    from flax import linen as nn

    from tpubench import config as config_lib
    from tpubench import mesh as mesh_lib
    from tpubench import registry

    out = {}
    for name in registry.names():
        workload = registry.create(config_lib.load(name, "smoke"))
        boxed, _ = jax.eval_shape(workload.init, jax.random.PRNGKey(0))
        out[name] = mesh_lib.logical_names(nn.get_partition_spec(boxed))
    return out


def test_harness_rules_keep_only_names_several_workloads_share():
    """Every name in mesh.DEFAULT_RULES but "batch"/"length" (activations) is a param name of at
    least two workloads; every name only one workload uses is mapped by that workload's own
    rules and absent from the defaults; every workload's names are covered.
    Bites: "conv_out" back in DEFAULT_RULES, or ResNet's logical_axis_rules() returning ()."""
    from tpubench import config as config_lib
    from tpubench import mesh as mesh_lib
    from tpubench import registry

    used = _logical_names_by_workload()
    default = {name for name, _ in mesh_lib.DEFAULT_RULES}
    for name in default - {"batch", "length"}:
        assert sum(name in names for names in used.values()) >= 2, name
    for workload, names in used.items():
        own = {n for n, _ in registry.create(config_lib.load(workload, "smoke"))
               .logical_axis_rules()}
        for name in names:
            if sum(name in other for other in used.values()) == 1:
                assert name in own and name not in default, (workload, name)
        assert names <= own | default, (workload, names - own - default)
    assert {"conv_out", "embed_rows"} <= set().union(*used.values())  # the check has names


def test_an_unmapped_logical_name_is_refused_not_silently_replicated():
    """flax replicates a logical name no rule maps; the harness refuses it, naming it.
    Bites: state_shardings without check_rules_cover (the kernel would come back replicated)."""
    from flax import linen as nn
    from jax.sharding import AbstractMesh

    from tpubench import mesh as mesh_lib

    boxed = {"w": nn.Partitioned(jax.ShapeDtypeStruct((8, 8), np.float32), ("conv_out", None))}
    mesh = AbstractMesh((1, 1, 2), mesh_lib.AXES)
    with pytest.raises(ValueError, match=r"\['conv_out'\] that no rule maps"):
        mesh_lib.state_shardings(boxed, mesh, mesh_lib.rules(), 0)
    shardings = mesh_lib.state_shardings(boxed, mesh, mesh_lib.rules([("conv_out", "tensor")]), 0)
    assert shardings["w"].spec == P("tensor", None)


# ---- the sharding report -----------------------------------------------------------------------

def test_fsdp_rule_says_why_it_leaves_a_leaf_unsplit():
    """Each outcome of the FSDP shape rule, with its reason code.
    Bites: checking the size before "already over fsdp" (a small logically-sharded table would be
    reported as below fsdp_min_size), or splitting the first instead of the largest dim."""
    from tpubench import mesh as m

    assert m.fsdp_rule(P(), (16, 64), 8, 100) == (P(None, "fsdp"), m.FSDP_SHARDED)
    assert m.fsdp_rule(P(), (16, 64), 1, 100) == (P(), m.FSDP_OFF)
    assert m.fsdp_rule(P(), (9, 7), 8, 10) == (P(), m.FSDP_NO_DIVISIBLE_DIM)
    assert m.fsdp_rule(P(None, "tensor"), (7, 64), 8, 10) == (
        P(None, "tensor"), m.FSDP_NO_DIVISIBLE_DIM)  # the divisible dim is taken
    assert m.fsdp_rule(P(), (4,), 8, 10) == (P(), m.FSDP_BELOW_MIN_SIZE)
    rows = P(("data", "fsdp"), None)
    assert m.fsdp_rule(rows, (8, 1), 8, 100) == (rows, m.FSDP_BY_LOGICAL_RULE)


def test_report_gives_spec_bytes_and_reason_of_every_leaf():
    """A hand-made state on an abstract 8-way FSDP mesh: one leaf of each FSDP outcome, with the
    bytes each device holds worked out by hand (float32: 4 bytes).
    Bites: bytes per device from the global shape (w would read 576), or the summary line not
    naming the leaf with no divisible dimension."""
    from flax import linen as nn
    from jax.sharding import AbstractMesh

    from tpubench import mesh as mesh_lib
    from tpubench.platform import sharding_report as sr

    f32 = lambda *shape: jax.ShapeDtypeStruct(shape, np.float32)  # noqa: E731
    boxed = {"params": {"w": nn.Partitioned(f32(24, 6), ("rows", None)), "odd": f32(9, 7),
                        "small": f32(4), "emb": nn.Partitioned(f32(64, 4), ("embed_rows", None))}}
    rules = mesh_lib.rules([("rows", None), ("embed_rows", mesh_lib.BATCH_AXES)])
    mesh = AbstractMesh((1, 8, 1), mesh_lib.AXES)
    shardings = mesh_lib.state_shardings(boxed, mesh, rules, 32)
    report = sr.build(nn.meta.unbox(boxed), shardings, nn.get_partition_spec(boxed), rules,
                      dict(mesh.shape), 32)
    leaves = {leaf["path"]: leaf for leaf in report["leaves"]}
    assert leaves["params/w"] == {
        "path": "params/w", "shape": [24, 6], "dtype": "float32", "logical": ["rows", None],
        "spec": ["fsdp", None], "bytes": 576, "shard_shape": [3, 6], "bytes_per_device": 72,
        "fsdp": "fsdp_rule"}
    assert (leaves["params/odd"]["fsdp"], leaves["params/odd"]["bytes_per_device"]) == (
        "no_divisible_dim", 252)
    assert (leaves["params/small"]["fsdp"], leaves["params/small"]["spec"]) == (
        "below_fsdp_min_size", [])
    assert leaves["params/emb"]["spec"] == [["data", "fsdp"], None]
    assert (leaves["params/emb"]["fsdp"], leaves["params/emb"]["bytes_per_device"]) == (
        "logical_rule", 128)
    t = report["totals"]
    assert (t["leaves"], t["bytes"], t["bytes_per_device"]) == (4, 576 + 252 + 16 + 1024, 468)
    line = sr.summary_line(report)
    assert "FSDP split 1 leaves" in line
    assert "1 below fsdp_min_size=32 (16 B per device)" in line
    assert "1 no free dimension divisible by fsdp=8 (252 B per device: params/odd (9, 7))" in line
    assert "1 already over fsdp through a logical-axis rule" in line
    assert re.search(r"\nparams/odd +\(9, 7\) +float32 +P\(\) +252 B +no_divisible_dim\n",
                     sr.text(report))


def test_fsdp_run_writes_the_sharding_report_and_names_it(tmp_path):
    """A real run (`python -m workloads.resnet.main`, 8 simulated devices, FSDP): sharding.json
    holds the conv kernel and its LARS momentum split over fsdp (36,864 bytes, 4,608 per device)
    and a BN scale below fsdp_min_size replicated; the totals are the sum of the leaves and the
    params' total is 4 bytes x the parameter count; summary.json names the file; the summary line
    is printed. Bites: reading bytes per device from the global shape, or no summary key."""
    import json

    import runs

    from tpubench import config as config_lib
    from tpubench import registry
    from tpubench.loops import steps

    proc = runs.run_main("resnet", "smoke", tmp_path, "--config.run.mesh.data=1",
                         "--config.run.mesh.fsdp=-1", "--config.run.fsdp_min_size=4096",
                         XLA_FLAGS="--xla_force_host_platform_device_count=8")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    summary = runs.summary(tmp_path)
    assert summary["status"] == "aborted"  # the smoke config's budget: 1 step
    assert summary["sharding_report"] == str(tmp_path / "sharding.json")
    report = json.loads((tmp_path / "sharding.json").read_text())
    assert report["mesh"] == {"data": 1, "fsdp": 8, "tensor": 1}
    leaves = {leaf["path"]: leaf for leaf in report["leaves"]}
    for path in ("params/BottleneckBlock_2/Conv_1/kernel",
                 "opt_state/3/trace/BottleneckBlock_2/Conv_1/kernel"):
        leaf = leaves[path]
        assert (leaf["shape"], leaf["spec"], leaf["fsdp"]) == (
            [3, 3, 32, 32], [None, None, "fsdp", "tensor"], "fsdp_rule")
        assert (leaf["bytes"], leaf["shard_shape"], leaf["bytes_per_device"]) == (
            36864, [3, 3, 4, 32], 4608)
    scale = leaves["params/BottleneckBlock_2/BatchNorm_1/scale"]
    assert (scale["spec"], scale["bytes_per_device"], scale["fsdp"]) == (
        [], 128, "below_fsdp_min_size")
    t = report["totals"]
    assert t["bytes_per_device"] == sum(leaf["bytes_per_device"] for leaf in leaves.values())
    workload = registry.create(config_lib.load("resnet", "smoke"))
    assert t["groups"]["params"]["bytes"] == 4 * steps.param_count(workload)
    assert t["bytes_per_device"] < t["bytes"] / 2  # FSDP did shrink what a device holds
    assert "below fsdp_min_size=4096" in proc.stdout
    assert "params/BottleneckBlock_2/Conv_1/kernel" in (tmp_path / "sharding.txt").read_text()
