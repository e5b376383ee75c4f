"""tpubench.platform.distributed: how each environment is read, and bad input refused before
compute."""

import os
import subprocess
import sys

import jax
import pytest

from tpubench.errors import UsageError
from tpubench.launch.local import free_port
from tpubench.platform import distributed
from tpubench.platform.distributed import Plan, parse_address, plan_from_env

EXPLICIT = {
    "TPUBENCH_COORDINATOR": "10.0.0.2:12355",
    "TPUBENCH_NUM_PROCESSES": "4",
    "TPUBENCH_PROCESS_ID": "3",
}
SLURM = {
    "SLURM_JOB_ID": "77",
    "SLURM_STEP_NODELIST": "node[001-002]",
    "SLURM_NTASKS": "16",
    "SLURM_PROCID": "9",
}


def test_plain_process_is_single():
    assert plan_from_env({}, on_tpu_vm=False) == Plan("single")


def test_explicit_variables_become_initialize_arguments():
    plan = plan_from_env(EXPLICIT, on_tpu_vm=False)
    assert plan == Plan("explicit", "10.0.0.2:12355", 4, 3, 300)


def test_init_timeout_is_read_from_env():
    plan = plan_from_env({**EXPLICIT, "TPUBENCH_INIT_TIMEOUT_S": "20"}, on_tpu_vm=False)
    assert plan.initialization_timeout_s == 20


def test_process_id_must_be_below_count():
    with pytest.raises(UsageError, match=r"TPUBENCH_PROCESS_ID=4 is not below .*=4"):
        plan_from_env({**EXPLICIT, "TPUBENCH_PROCESS_ID": "4"}, on_tpu_vm=False)


def test_partial_explicit_variables_name_the_missing_one():
    env = {k: v for k, v in EXPLICIT.items() if k != "TPUBENCH_PROCESS_ID"}
    with pytest.raises(UsageError, match="TPUBENCH_PROCESS_ID missing"):
        plan_from_env(env, on_tpu_vm=False)


@pytest.mark.parametrize("count", ["0", "two", "-1"])
def test_count_must_be_a_positive_integer(count):
    with pytest.raises(UsageError, match="TPUBENCH_NUM_PROCESSES"):
        plan_from_env({**EXPLICIT, "TPUBENCH_NUM_PROCESSES": count}, on_tpu_vm=False)


@pytest.mark.parametrize("address", ["localhost", "host:", ":123", "host:0", "host:99999",
                                     "a b:12", "http://h:1"])
def test_malformed_coordinator_address_is_refused(address):
    with pytest.raises(UsageError, match="TPUBENCH_COORDINATOR"):
        plan_from_env({**EXPLICIT, "TPUBENCH_COORDINATOR": address}, on_tpu_vm=False)


@pytest.mark.parametrize("address,expected", [
    ("localhost:12355", ("localhost", 12355)),
    ("10.0.0.2:1", ("10.0.0.2", 1)),
    ("[::1]:8476", ("::1", 8476)),
])
def test_parse_address(address, expected):
    assert parse_address(address) == expected


def test_slurm_with_several_tasks_lets_jax_read_slurm():
    assert plan_from_env(SLURM, on_tpu_vm=False) == Plan("slurm", None, 16, 9, 300)


def test_single_task_slurm_job_is_single():
    env = {**SLURM, "SLURM_NTASKS": "1", "SLURM_PROCID": "0"}
    assert plan_from_env(env, on_tpu_vm=False) == Plan("single")


def test_slurm_procid_beyond_ntasks_is_refused():
    with pytest.raises(UsageError, match="SLURM_PROCID=16 is not below SLURM_NTASKS=16"):
        plan_from_env({**SLURM, "SLURM_PROCID": "16"}, on_tpu_vm=False)


def test_explicit_variables_win_over_slurm():
    assert plan_from_env({**SLURM, **EXPLICIT}, on_tpu_vm=False).method == "explicit"


def test_cloud_tpu_vm_auto_detects():
    assert plan_from_env({}, on_tpu_vm=True) == Plan("auto")


def test_mode_auto_and_off():
    assert plan_from_env({"TPUBENCH_DISTRIBUTED": "auto"}, on_tpu_vm=False).method == "auto"
    off = {**EXPLICIT, **SLURM, "TPUBENCH_DISTRIBUTED": "off"}
    assert plan_from_env(off, on_tpu_vm=True) == Plan("single")
    with pytest.raises(UsageError, match="TPUBENCH_DISTRIBUTED='maybe'"):
        plan_from_env({"TPUBENCH_DISTRIBUTED": "maybe"})


def test_single_process_initialize_does_nothing():
    distributed.initialize_from_env({"TPUBENCH_DISTRIBUTED": "off"})
    assert not jax.distributed.is_initialized()


def test_initialize_after_a_computation_is_a_usage_error():
    jax.numpy.zeros(1).block_until_ready()  # a backend now exists in this process
    with pytest.raises(UsageError, match="must run before any JAX computation"):
        distributed.initialize_from_env({**EXPLICIT, "TPUBENCH_PROCESS_ID": "0"})
    assert not jax.distributed.is_initialized()


def test_processes_disagreeing_on_the_count_all_fail_with_usage_error(repo_root, tmp_path):
    code = ("from tpubench import errors\nfrom tpubench.platform import distributed\n"
            "try:\n    distributed.initialize_from_env()\n"
            "except errors.UsageError as e:\n    print('USAGE:', e); raise SystemExit(2)\n")
    port = free_port()
    procs = []
    for process_id, count in ((0, 2), (1, 3)):
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(repo_root),
               "TPUBENCH_COORDINATOR": f"localhost:{port}", "TPUBENCH_NUM_PROCESSES": str(count),
               "TPUBENCH_PROCESS_ID": str(process_id), "TPUBENCH_INIT_TIMEOUT_S": "30"}
        procs.append(subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
    outputs = [p.communicate(timeout=90)[0] for p in procs]
    assert [p.returncode for p in procs] == [2, 2]
    for out in outputs:
        assert ("USAGE: The processes disagree on the process count: process 0 (the coordinator) "
                "has TPUBENCH_NUM_PROCESSES=2; process 1 has 3.") in out
