"""Plain multi-node `jax.distributed` (no SLURM, no TPU metadata): one process per host.

    python tpubench/launch/multinode.py --hosts=10.0.0.2,10.0.0.3 [--port=12355] [--workdir=DIR] \
        [--dry-run] -- tpubench run resnet --config=full

Process i runs on host i with `TPUBENCH_COORDINATOR=<first host>:<port>`,
`TPUBENCH_NUM_PROCESSES=<hosts>` and `TPUBENCH_PROCESS_ID=i`, which
`tpubench.platform.distributed.initialize_from_env()` passes to `jax.distributed.initialize`. Each
process sees all of its host's GPUs. `--dry-run` prints one `ssh` command per host (also the recipe
to type by hand on each node); otherwise they are started together, their output prefixed with the
host, and if one fails the others are stopped. Needs only Python and ssh access to the hosts.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    """The CLI flags; the command to run comes after `--`."""
    p = argparse.ArgumentParser(
        prog="tpubench launch multinode", description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n"
        "  tpubench launch multinode --hosts=10.0.0.2,10.0.0.3 --dry-run -- tpubench run resnet "
        "--config=full\n"
        "  tpubench launch multinode --hosts=h0,h1 --port=12400 --workdir=~/tpubench -- "
        "tpubench run bert --config=full\n"
        "(or python tpubench/launch/multinode.py ... without installing tpubench)")
    p.add_argument("--hosts", required=True, help="comma-separated; the first is the coordinator")
    p.add_argument("--port", type=int, default=12355,
                   help="coordinator port on the first host (default: %(default)s)")
    p.add_argument("--workdir", default="~/tpubench",
                   help="checkout on every host (default: %(default)s)")
    p.add_argument("--dry-run", action="store_true", help="print the per-host commands only")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    return p


def node_env(hosts: Sequence[str], port: int, process_id: int) -> dict[str, str]:
    """The three variables of process `process_id`."""
    return {
        "TPUBENCH_COORDINATOR": f"{hosts[0]}:{port}",
        "TPUBENCH_NUM_PROCESSES": str(len(hosts)),
        "TPUBENCH_PROCESS_ID": str(process_id),
    }


def ssh_commands(hosts: Sequence[str], port: int, workdir: str, command: Sequence[str]):
    """One `ssh HOST 'cd WORKDIR && VARS... COMMAND'` per host, in process-id order."""
    commands = []
    for i, host in enumerate(hosts):
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in node_env(hosts, port, i).items())
        remote = f"cd {workdir} && {env} {shlex.join(command)}"
        commands.append(["ssh", host, remote])
    return commands


def _pump(proc: subprocess.Popen, prefix: str) -> None:
    for line in proc.stdout:
        sys.stdout.write(f"{prefix}{line}")
        sys.stdout.flush()


def run_all(commands: Sequence[Sequence[str]], hosts: Sequence[str]) -> int:
    """Start every command; stop the rest when one fails; the first failure's status wins."""
    procs = [subprocess.Popen(list(c), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace") for c in commands]
    pumps = [threading.Thread(target=_pump, args=(p, f"[{h}] "), daemon=True)
             for p, h in zip(procs, hosts, strict=True)]
    for t in pumps:
        t.start()
    status = 0
    while any(p.poll() is None for p in procs):
        failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
        if failed and not status:
            status = failed[0]
            for p in procs:
                if p.poll() is None:
                    p.terminate()  # closes the ssh session; the remote side gets SIGHUP
        time.sleep(0.1)
    for t in pumps:
        t.join(timeout=5)
    return status or next((p.returncode for p in procs if p.returncode), 0)


def main(argv: Sequence[str]) -> int:
    """Print (--dry-run) or run the per-host commands; returns an exit status."""
    args = build_parser().parse_args(list(argv))
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    hosts = [h for h in args.hosts.split(",") if h]
    if not command:
        raise SystemExit("error: the command to run goes after `--`")
    if not hosts:
        raise SystemExit("error: --hosts lists no host")
    commands = ssh_commands(hosts, args.port, args.workdir, command)
    for c in commands:
        print(shlex.join(c), flush=True)
    return 0 if args.dry_run else run_all(commands, hosts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
