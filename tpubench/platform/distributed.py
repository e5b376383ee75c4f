"""Multi-process start-up: one call, `initialize_from_env()`, before any JAX computation.

Every entry point (`tpubench run`, `python -m workloads.<name>.main`) calls it first thing. It reads
the environment and calls `jax.distributed.initialize` the right way for where it runs:

- explicit (`tpubench launch local`, `tpubench/launch/multinode.py`, any hand-made cluster): the
  variables `TPUBENCH_COORDINATOR` (host:port of process 0), `TPUBENCH_NUM_PROCESSES` and
  `TPUBENCH_PROCESS_ID`. CPU collectives go through gloo so that N CPU processes form one mesh.
- SLURM with more than one task: JAX reads `SLURM_*` itself (one process per task; with one task
  per GPU each process sees its own GPU).
- a Cloud TPU VM (a TPU device node is present) or `TPUBENCH_DISTRIBUTED=auto`: no arguments;
  JAX asks the TPU metadata server for the slice's workers.
- anything else (a laptop, one GPU host, a single-task SLURM job): nothing to do.

`TPUBENCH_DISTRIBUTED=off` turns it off whatever else is set. Bad input (a process id not below the
count, a count that disagrees with process 0's, a malformed address) is a `UsageError` before any
compute. It MUST run before the first JAX computation: once a backend exists, JAX cannot join a
cluster, and this function says so instead of letting each process train alone.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
from collections.abc import Mapping

from tpubench.errors import UsageError

ENV_COORDINATOR = "TPUBENCH_COORDINATOR"
ENV_NUM_PROCESSES = "TPUBENCH_NUM_PROCESSES"
ENV_PROCESS_ID = "TPUBENCH_PROCESS_ID"
ENV_MODE = "TPUBENCH_DISTRIBUTED"  # "auto" | "off" | unset (detect)
ENV_INIT_TIMEOUT_S = "TPUBENCH_INIT_TIMEOUT_S"
EXPLICIT_VARS = (ENV_COORDINATOR, ENV_NUM_PROCESSES, ENV_PROCESS_ID)

_SLURM_VARS = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID")
# Device nodes of TPU chips on a Cloud TPU VM (v4/v5p: /dev/accel*, v5e/v6e: /dev/vfio/N).
_TPU_DEVICE_GLOBS = ("/dev/accel[0-9]*", "/dev/vfio/[0-9]*")
_HOST_PORT = re.compile(
    r"^(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.-]+)):(?P<port>\d+)$"
)
_COUNT_KEY = "tpubench/num_processes/"


@dataclasses.dataclass(frozen=True)
class Plan:
    """How this process joins (or does not join) a cluster.

    method: "single" (no call), "explicit" (TPUBENCH_* variables), "slurm", or "auto" (Cloud TPU
      VM or TPUBENCH_DISTRIBUTED=auto: `jax.distributed.initialize()` without arguments).
    The other fields are set only for "explicit" and "slurm" (for SLURM they are what JAX will
    read; they are checked here, not passed).
    """

    method: str
    coordinator_address: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    initialization_timeout_s: int = 300


def parse_address(text: str) -> tuple[str, int]:
    """'host:port' or '[ipv6]:port' -> (host, port); anything else is a `UsageError`."""
    match = _HOST_PORT.match(text.strip())
    if not match:
        raise UsageError(
            f"{ENV_COORDINATOR}={text!r} is not an address: expected HOST:PORT, e.g. "
            "10.0.0.2:12355 or localhost:12355 ([::1]:12355 for IPv6)."
        )
    port = int(match["port"])
    if not 0 < port < 65536:
        raise UsageError(f"{ENV_COORDINATOR}={text!r}: port {port} is outside 1..65535.")
    return match["ip6"] or match["host"], port


def _parse_int(name: str, text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{name}={text!r} is not an integer.") from None
    if value < minimum:
        raise UsageError(f"{name}={value} must be >= {minimum}.")
    return value


def _check_rank(id_name: str, process_id: int, count_name: str, num_processes: int) -> None:
    if process_id >= num_processes:
        raise UsageError(
            f"{id_name}={process_id} is not below {count_name}={num_processes}: process ids "
            f"run 0..{num_processes - 1}."
        )


def _on_cloud_tpu_vm() -> bool:
    return any(glob.glob(pattern) for pattern in _TPU_DEVICE_GLOBS)


def plan_from_env(environ: Mapping[str, str] | None = None, on_tpu_vm: bool | None = None) -> Plan:
    """Decide how to initialise from `environ` (default `os.environ`); pure apart from the TPU
    device-node check (`on_tpu_vm` overrides it). Raises `UsageError` on bad input."""
    env = os.environ if environ is None else environ
    timeout_s = _parse_int(ENV_INIT_TIMEOUT_S, env.get(ENV_INIT_TIMEOUT_S, "300"), 1)
    mode = env.get(ENV_MODE, "").strip().lower()
    if mode not in ("", "auto", "off"):
        raise UsageError(f"{ENV_MODE}={mode!r}: expected 'auto', 'off' or unset.")
    if mode == "off":
        return Plan("single")

    present = [name for name in EXPLICIT_VARS if env.get(name, "") != ""]
    if present:
        missing = [name for name in EXPLICIT_VARS if name not in present]
        if missing:
            raise UsageError(
                f"{', '.join(present)} set but {', '.join(missing)} missing: a multi-process run "
                f"needs all of {', '.join(EXPLICIT_VARS)} (or none)."
            )
        parse_address(env[ENV_COORDINATOR])
        num_processes = _parse_int(ENV_NUM_PROCESSES, env[ENV_NUM_PROCESSES], 1)
        process_id = _parse_int(ENV_PROCESS_ID, env[ENV_PROCESS_ID], 0)
        _check_rank(ENV_PROCESS_ID, process_id, ENV_NUM_PROCESSES, num_processes)
        return Plan("explicit", env[ENV_COORDINATOR].strip(), num_processes, process_id, timeout_s)

    if mode == "auto":
        return Plan("auto", initialization_timeout_s=timeout_s)

    if all(name in env for name in _SLURM_VARS):
        num_processes = _parse_int("SLURM_NTASKS", env["SLURM_NTASKS"], 1)
        process_id = _parse_int("SLURM_PROCID", env["SLURM_PROCID"], 0)
        _check_rank("SLURM_PROCID", process_id, "SLURM_NTASKS", num_processes)
        if num_processes > 1:
            return Plan("slurm", None, num_processes, process_id, timeout_s)
        return Plan("single")

    if on_tpu_vm if on_tpu_vm is not None else _on_cloud_tpu_vm():
        return Plan("auto", initialization_timeout_s=timeout_s)
    return Plan("single")


def _backends_started() -> bool:
    try:  # Private, but the only way to know before JAX's own late RuntimeError.
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - a future JAX moved it; JAX still raises later.
        return False
    return xla_bridge.backends_are_initialized()


def _check_count_agrees(num_processes: int, process_id: int, timeout_s: int) -> None:
    """Every process publishes the count it was given; process 0 (whose count the coordinator
    uses) compares and publishes one verdict, so that every process fails alike, not just one."""
    import jax
    from jax._src import distributed as jax_distributed  # the coordination-service client

    client = jax_distributed.global_state.client
    if client is None:  # pragma: no cover - initialize() succeeded, so there is one.
        return
    timeout_ms = timeout_s * 1000
    client.key_value_set(f"{_COUNT_KEY}{process_id}", str(num_processes))
    if process_id == 0:
        others = {
            i: int(client.blocking_key_value_get(f"{_COUNT_KEY}{i}", timeout_ms))
            for i in range(1, num_processes)
        }
        wrong = {i: n for i, n in others.items() if n != num_processes}
        verdict = "ok" if not wrong else "; ".join(
            [f"process 0 (the coordinator) has {ENV_NUM_PROCESSES}={num_processes}"]
            + [f"process {i} has {n}" for i, n in sorted(wrong.items())]
        )
        client.key_value_set(f"{_COUNT_KEY}verdict", verdict)
    verdict = client.blocking_key_value_get(f"{_COUNT_KEY}verdict", timeout_ms)
    if verdict != "ok":
        jax.distributed.shutdown()
        raise UsageError(
            f"The processes disagree on the process count: {verdict}. Start every process "
            "with the same count."
        )


def initialize_from_env(environ: Mapping[str, str] | None = None) -> None:
    """Join the cluster this process was started in, or do nothing for a single process.

    Call it before any JAX computation (before `jax.devices()`, `jnp` ops, `jit`). Calling it
    again after a successful call is a no-op. Raises `UsageError` for bad input (see module doc)
    or when a JAX backend already exists in a multi-process run.
    """
    plan = plan_from_env(environ)
    if plan.method == "single":
        return
    import jax

    if jax.distributed.is_initialized():
        return
    if _backends_started():
        raise UsageError(
            "tpubench.platform.distributed.initialize_from_env() must run before any JAX "
            "computation "
            f"(a backend already exists, so this {plan.method} multi-process run cannot join its "
            "cluster). Call it first thing in main()."
        )
    if plan.method == "explicit":
        # CPU devices of different processes need a collectives implementation to talk; gloo ships
        # with jaxlib. It only affects the CPU backend, so it is harmless on GPU hosts.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=plan.coordinator_address,
            num_processes=plan.num_processes,
            process_id=plan.process_id,
            initialization_timeout=plan.initialization_timeout_s,
        )
        _check_count_agrees(plan.num_processes, plan.process_id, plan.initialization_timeout_s)
    else:  # "slurm" and "auto": JAX reads the cluster's own environment.
        try:
            jax.distributed.initialize(initialization_timeout=plan.initialization_timeout_s)
        except ValueError as e:  # JAX found no cluster to join ("... should be defined")
            raise UsageError(
                f"{plan.method}: JAX could not discover the cluster ({e}). Set "
                f"{', '.join(EXPLICIT_VARS)}, or {ENV_MODE}=off for a single process."
            ) from e
