"""tpubench.platform.topology: target names for `tpubench fit`, and compile-only TPU devices via
libtpu."""

import importlib.util
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from tpubench.errors import UsageError
from tpubench.platform import topology
from tpubench.platform.chips import CHIPS

HAS_LIBTPU = importlib.util.find_spec("libtpu") is not None
# In CI (CI=true) a missing libtpu FAILS these tests; elsewhere they are skipped.
needs_libtpu = pytest.mark.usefixtures("libtpu")


@pytest.mark.parametrize("name,platform,chip,chips,hosts,accelerator_type", [
    ("v5p:2x2x2", "tpu", "v5p", 8, 2, "v5p-16"),
    ("v5p:4x4x4", "tpu", "v5p", 64, 16, "v5p-128"),
    ("v4:2x2x1", "tpu", "v4", 4, 1, "v4-8"),
    ("v6e:4x4", "tpu", "v6e", 16, 4, "v6e-16"),
    ("v5e:2x2", "tpu", "v5e", 4, 1, "v5litepod-4"),
    ("v5e:2x4", "tpu", "v5e", 8, 1, "v5litepod-8"),
    ("cpu:8", "cpu", "cpu", 8, 1, ""),
    ("gpu:h100x8", "gpu", "h100", 8, 1, ""),
    ("gpu:a100x16", "gpu", "a100", 16, 2, ""),
])
def test_parse_known_forms(name, platform, chip, chips, hosts, accelerator_type):
    t = topology.parse(name)
    assert (t.name, t.platform, t.chip, t.chip_count, t.device_count, t.num_hosts) == (
        name, platform, chip, chips, chips, hosts)
    assert t.accelerator_type == accelerator_type
    assert t.jax_topology == (name if platform == "tpu" else "")


def test_parse_normalises_case_and_space():
    assert topology.parse(" V5P:2x2x2 ").name == "v5p:2x2x2"


def test_chip_spec_comes_from_the_chip_table():
    assert topology.parse("v5p:2x2x2").chip_spec is CHIPS["v5p"]
    assert topology.parse("gpu:h100x8").chip_spec is CHIPS["h100"]
    assert topology.parse("cpu:4").chip_spec is None


@pytest.mark.parametrize("name,why", [
    ("v7:2x2", "Unknown topology 'v7:2x2'. Known forms"),
    ("v5p:2x2", "v5p grids have 3 dimensions"),
    ("v6e:2x2x1", "v6e grids have 2 dimensions"),
    ("v5e:3x3", "v5e slices are 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"),
    ("v5p:2x2x3", "multiples of 4"),
    ("v4:0x2x2", "is not a grid"),
    ("cpu:eight", "cpu takes a device count"),
    ("cpu:0", "cpu takes a device count"),
    ("gpu:b200x8", "GPU kinds are a100, h100, h200"),
    ("v5p", "Known forms: v4:AxBxC and v5p:AxBxC"),
])
def test_unknown_topology_lists_the_known_forms(name, why):
    with pytest.raises(UsageError, match="Known forms") as err:
        topology.parse(name)
    assert why in str(err.value)


@pytest.mark.parametrize("name,wrap,bounds,config", [
    ("v5p:2x2x2", (False, False, False), (2, 2, 1), "megacore"),
    ("v5p:4x4x4", (True, True, True), (2, 2, 1), "megacore"),
    ("v6e:8x16", (False, True, False), (2, 2, 1), "default"),
    ("v6e:16x16", (True, True, False), (2, 2, 1), "default"),
    ("v5e:1x1", (False, False, False), (1, 1, 1), "default"),
])
def test_tpu_topology_kwargs(name, wrap, bounds, config):
    kwargs = topology.parse(name).tpu_topology_kwargs()
    assert kwargs == {"topology_name": name, "platform": "tpu", "chip_config_name": config,
                      "chips_per_host_bounds": bounds, "num_slices": 1, "wrap": wrap}


def test_cpu_target_uses_this_process_devices():
    assert topology.parse(f"cpu:{jax.device_count()}").devices() == jax.devices()


def test_cpu_target_with_other_count_says_how_to_get_it():
    count = jax.device_count() + 7
    with pytest.raises(UsageError, match=f"JAX_NUM_CPU_DEVICES={count}"):
        topology.parse(f"cpu:{count}").devices()


def test_gpu_target_without_the_gpus_is_a_usage_error():
    with pytest.raises(UsageError, match="needs 8 H100 GPUs in this job"):
        topology.parse("gpu:h100x8").devices()


def test_tpu_target_without_libtpu_says_how_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_libtpu(name, *args, **kwargs):
        if name == "libtpu":
            raise ImportError("no libtpu")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_libtpu)
    with pytest.raises(UsageError, match=r"pip install 'tpubench\[tpu\]'"):
        topology.parse("v5p:2x2x2").devices()


@needs_libtpu
@pytest.mark.parametrize("name,kind,hosts", [
    ("v5p:2x2x2", "TPU v5", 2), ("v4:2x2x1", "TPU v4", 1), ("v6e:4x4", "TPU v6 lite", 4),
])
def test_libtpu_builds_compile_only_devices(name, kind, hosts):
    t = topology.parse(name)
    devices = t.devices()
    assert len(devices) == t.device_count
    assert {d.device_kind for d in devices} == {kind}
    assert len({d.process_index for d in devices}) == hosts == t.num_hosts


@needs_libtpu
def test_jit_compiles_for_a_v5p_slice_from_a_cpu_host():
    devices = topology.parse("v5p:2x2x2").devices()
    mesh = jax.sharding.Mesh(np.array(devices), ("data",))
    x = jax.ShapeDtypeStruct((64, 128), jnp.float32,
                             sharding=NamedSharding(mesh, PartitionSpec("data")))
    start = time.perf_counter()
    compiled = jax.jit(lambda a: (a * 2.0).sum()).lower(x).compile()
    assert time.perf_counter() - start < 30
    # Each of the 8 chips holds 64/8 rows of 128 float32 values; the sum is an all-reduce.
    assert compiled.memory_analysis().argument_size_in_bytes == 8 * 128 * 4
    assert "all-reduce" in compiled.as_text()
