"""Launchers: `tpubench launch local` for real (2 CPU processes), and the exact commands that the
Cloud TPU VM, SLURM and multi-node launchers print with --dry-run."""

import importlib.util
import io
import os
import signal
import subprocess
import sys
import time

import pytest

from tpubench.errors import UsageError
from tpubench.launch import local as launch_local

ALLGATHER = """
from tpubench.platform import distributed
distributed.initialize_from_env()
import jax, jax.numpy as jnp
from jax.experimental import multihost_utils
mine = jnp.array([jax.process_index() * 10 + 7])
print("gathered", multihost_utils.process_allgather(mine).ravel().tolist(), jax.process_count())
"""


@pytest.fixture
def child_env(repo_root):
    return {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(repo_root)}


def _load(repo_root, name):
    path = repo_root / "tpubench" / "launch" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"launch_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- tpubench launch local ---------------------------------------------------------------------

def test_two_local_processes_form_one_jax_cluster(child_env):
    out = io.StringIO()
    status = launch_local.run([sys.executable, "-c", ALLGATHER], processes=2, out=out,
                              base_env=child_env)
    lines = out.getvalue().splitlines()
    assert status == 0
    assert "[p0] gathered [7, 17] 2" in lines
    assert "[p1] gathered [7, 17] 2" in lines


def test_one_failure_stops_the_others_and_sets_the_status(child_env):
    code = ("import os, signal, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)  # like JAX: SIGTERM alone won't do\n"
            "if os.environ['TPUBENCH_PROCESS_ID'] == '1': sys.exit(3)\n"
            "time.sleep(60)\n")
    out = io.StringIO()
    start = time.monotonic()
    status = launch_local.run([sys.executable, "-c", code], processes=3, grace_s=0.5, out=out,
                              base_env=child_env)
    assert status == 3
    assert time.monotonic() - start < 20
    assert "[launch] p1 exited with status 3; stopping the others" in out.getvalue()


def test_sigterm_is_forwarded_to_every_child(child_env):
    code = ("import os, signal, sys, time\n"
            "def bye(signum, frame):\n"
            "    print('got signal', signum, flush=True); sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, bye)\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "tpubench.launch.local", "--processes=2", "--grace-s=20", "--",
         sys.executable, "-c", code],
        env=child_env, stdout=subprocess.PIPE, text=True)
    seen = []
    while not {"[p0] ready", "[p1] ready"} <= set(seen):
        line = launcher.stdout.readline()
        assert line, f"the launcher ended before its children were ready: {seen}"
        seen.append(line.rstrip("\n"))
    launcher.send_signal(signal.SIGTERM)
    # Past the grace period a child that missed the signal is killed (status 137): the
    # assertions below then show which one, rather than a timeout.
    rest, _ = launcher.communicate(timeout=120)
    lines = seen + rest.splitlines()
    assert launcher.returncode == 0, lines
    assert f"[p0] got signal {int(signal.SIGTERM)}" in lines
    assert f"[p1] got signal {int(signal.SIGTERM)}" in lines


def test_child_env_sets_the_three_variables():
    env = launch_local.child_env({"HOME": "/h"}, 1, 4, "localhost:1234")
    assert env["TPUBENCH_COORDINATOR"] == "localhost:1234"
    assert (env["TPUBENCH_NUM_PROCESSES"], env["TPUBENCH_PROCESS_ID"]) == ("4", "1")
    assert env["HOME"] == "/h"


def test_parse_args_splits_at_double_dash():
    args, command = launch_local.parse_args(["--processes=2", "--port=999", "--", "echo", "--x"])
    assert (args.processes, args.port, command) == (2, 999, ["echo", "--x"])


@pytest.mark.parametrize("argv,message", [
    (["--processes=2", "echo"], "Missing `-- CMD`"),
    (["--processes=0", "--", "echo"], "--processes=0: need at least 1"),
    (["--processes=2", "--"], "Nothing to run"),
    (["--", "echo"], "the following arguments are required: --processes"),
    (["--processes=2", "--port=70000", "--", "echo"], "--port=70000 is outside"),
])
def test_bad_launch_arguments_are_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message):
        launch_local.parse_args(argv)


def test_exit_status_of_a_signalled_child_is_128_plus_signal():
    assert launch_local.exit_status(-9) == 137
    assert launch_local.exit_status(4) == 4


# --- tpubench/launch/tpu_vm.py --dry-run
# -----------------------------------------------------------------

def test_tpu_vm_all_dry_run_prints_every_step_in_order(repo_root, capsys):
    tpu_vm = _load(repo_root, "tpu_vm")
    status = tpu_vm.main(["all", "--name=tb", "--zone=us-east5-a", "--accelerator-type=v5p-16",
                          "--dry-run", "--", "tpubench", "run", "resnet", "--config=full"])
    assert status == 0
    assert capsys.readouterr().out.splitlines() == [
        "gcloud compute tpus tpu-vm create tb --zone=us-east5-a --accelerator-type=v5p-16 "
        "--version=v2-alpha-tpuv5",
        "git archive --format=tar.gz --output=/tmp/tpubench.tar.gz HEAD",
        "gcloud compute tpus tpu-vm scp /tmp/tpubench.tar.gz tb:tpubench.tar.gz "
        "--zone=us-east5-a --worker=all",
        "gcloud compute tpus tpu-vm ssh tb --zone=us-east5-a --worker=all '--command=set -e; "
        "rm -rf ~/tpubench && mkdir -p ~/tpubench && tar -xzf ~/tpubench.tar.gz -C ~/tpubench "
        "&& cd ~/tpubench && python3 -m pip install -e \".[tpu]\"'",
        "gcloud compute tpus tpu-vm ssh tb --zone=us-east5-a --worker=all '--command=set -o "
        "pipefail; export PATH=$HOME/.local/bin:$PATH TPUBENCH_DISTRIBUTED=auto; cd ~/tpubench "
        "&& mkdir -p results && tpubench run resnet --config=full 2>&1 | tee -a "
        "results/run_$(hostname).log'",
        "gcloud compute tpus tpu-vm scp --recurse tb:tpubench/results results/tb "
        "--zone=us-east5-a --worker=0",
        "gcloud compute tpus tpu-vm delete tb --zone=us-east5-a --quiet",
    ]


def test_tpu_vm_spot_create_with_project(repo_root, capsys):
    tpu_vm = _load(repo_root, "tpu_vm")
    tpu_vm.main(["create", "--name=tb", "--zone=us-west4-a", "--project=my-proj", "--spot",
                 "--accelerator-type=v5litepod-8", "--dry-run"])
    assert capsys.readouterr().out.splitlines() == [
        "gcloud compute tpus tpu-vm create tb --zone=us-west4-a --project=my-proj "
        "--accelerator-type=v5litepod-8 --version=v2-alpha-tpuv5-lite --spot",
    ]


def test_tpu_vm_queued_create_waits_for_active_and_delete_forces(repo_root, capsys):
    tpu_vm = _load(repo_root, "tpu_vm")
    tpu_vm.main(["create", "--name=tb", "--zone=us-east5-a", "--queued",
                 "--accelerator-type=v6e-16", "--dry-run"])
    tpu_vm.main(["delete", "--name=tb", "--zone=us-east5-a", "--queued", "--dry-run"])
    assert capsys.readouterr().out.splitlines() == [
        "gcloud compute tpus queued-resources create tb --node-id=tb --zone=us-east5-a "
        "--accelerator-type=v6e-16 --runtime-version=v2-alpha-tpuv6e",
        "# repeated every 30 s until it prints ACTIVE:",
        "gcloud compute tpus queued-resources describe tb --zone=us-east5-a "
        "'--format=value(state.state)'",
        "gcloud compute tpus queued-resources delete tb --zone=us-east5-a --force --quiet",
    ]


def test_tpu_vm_install_from_git(repo_root, capsys):
    tpu_vm = _load(repo_root, "tpu_vm")
    tpu_vm.main(["install", "--name=tb", "--zone=z", "--git-url=https://example.com/tb.git",
                 "--git-ref=v0.1", "--dry-run"])
    assert capsys.readouterr().out.splitlines() == [
        "gcloud compute tpus tpu-vm ssh tb --zone=z --worker=all '--command=set -e; rm -rf "
        "~/tpubench && git clone https://example.com/tb.git ~/tpubench && git -C ~/tpubench "
        "checkout v0.1 && cd ~/tpubench && python3 -m pip install -e \".[tpu]\"'",
    ]


def test_tpu_vm_unknown_accelerator_needs_explicit_version(repo_root):
    tpu_vm = _load(repo_root, "tpu_vm")
    with pytest.raises(SystemExit, match="no default --version for --accelerator-type=v9-8"):
        tpu_vm.main(["create", "--name=tb", "--zone=z", "--accelerator-type=v9-8", "--dry-run"])


def test_tpu_vm_script_runs_as_a_command(repo_root):
    result = subprocess.run(
        [sys.executable, str(repo_root / "tpubench" / "launch" / "tpu_vm.py"), "fetch", "--name=tb",
         "--zone=z", "--local-dir=/tmp/r", "--dry-run"],
        capture_output=True, text=True, check=True)
    assert result.stdout == ("gcloud compute tpus tpu-vm scp --recurse tb:tpubench/results /tmp/r "
                             "--zone=z --worker=0\n")


# --- tpubench/launch/slurm.py and tpubench/launch/multinode.py --dry-run
# ------------------------------------------

def test_slurm_dry_run_prints_script_and_sbatch(repo_root, capsys):
    slurm = _load(repo_root, "slurm")
    slurm.main(["--workload=resnet", "--config=full", "--nodes=2", "--gpus-per-node=8",
                "--partition=gpu", "--workdir=/shared/tpubench", "--dry-run", "--",
                "--config.run.seed=1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "# results/slurm/tpubench-resnet-full.sbatch"
    assert lines[1] == "#!/bin/bash"
    sbatch = [line for line in lines if line.startswith("#SBATCH")]
    assert sbatch == [
        "#SBATCH --job-name=tpubench-resnet-full",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=8",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --cpus-per-task=12",
        "#SBATCH --time=04:00:00",
        "#SBATCH --output=results/slurm/%x-%j.out",
        "#SBATCH --partition=gpu",
    ]
    assert "cd /shared/tpubench" in lines
    assert ("srun --kill-on-bad-exit=1 python -m tpubench.cli run resnet --config=full "
            "--workdir=results/slurm/tpubench-resnet-full-${SLURM_JOB_ID} "
            "--config.run.seed=1") in lines
    assert lines[-1] == "sbatch results/slurm/tpubench-resnet-full.sbatch"


def test_multinode_dry_run_gives_each_host_its_process_id(repo_root, capsys):
    multinode = _load(repo_root, "multinode")
    multinode.main(["--hosts=10.0.0.2,10.0.0.3", "--port=9000", "--dry-run", "--",
                    "tpubench", "run", "resnet", "--config=full"])
    assert capsys.readouterr().out.splitlines() == [
        "ssh 10.0.0.2 'cd ~/tpubench && TPUBENCH_COORDINATOR=10.0.0.2:9000 "
        "TPUBENCH_NUM_PROCESSES=2 TPUBENCH_PROCESS_ID=0 tpubench run resnet "
        "--config=full'",
        "ssh 10.0.0.3 'cd ~/tpubench && TPUBENCH_COORDINATOR=10.0.0.2:9000 "
        "TPUBENCH_NUM_PROCESSES=2 TPUBENCH_PROCESS_ID=1 tpubench run resnet "
        "--config=full'",
    ]
