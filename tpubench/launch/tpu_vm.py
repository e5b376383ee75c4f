"""Cloud TPU VM launcher: create a slice, install tpubench on every worker, run, fetch, delete.

    tpubench launch tpu-vm create  --name=NAME --zone=ZONE --accelerator-type=v5p-16 [--spot]
                                   [--queued]
    tpubench launch tpu-vm install --name=NAME --zone=ZONE [--git-url=URL --git-ref=REF]
    tpubench launch tpu-vm run     --name=NAME --zone=ZONE -- tpubench run resnet --config=full
    tpubench launch tpu-vm fetch   --name=NAME --zone=ZONE [--local-dir=results/NAME]
    tpubench launch tpu-vm delete  --name=NAME --zone=ZONE [--queued]
    tpubench launch tpu-vm all     ... (create -> install -> run -> fetch -> delete)

(`python tpubench/launch/tpu_vm.py ...` is the same without installing tpubench.)

Every subcommand takes `--dry-run`, which prints the exact commands instead of running them.
`run` starts the same command on every worker (`--worker=all`) with `TPUBENCH_DISTRIBUTED=auto`,
so `tpubench.platform.distributed.initialize_from_env()` lets `jax.distributed` discover the slice
from the TPU metadata; each worker also keeps its log in `~/tpubench/results/`. The launcher needs
only Python and an authenticated `gcloud`, not tpubench or JAX.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence

# Default TPU VM software version per gcloud accelerator-type prefix.
RUNTIME_VERSIONS = {
    "v4": "tpu-ubuntu2204-base",
    "v5litepod": "v2-alpha-tpuv5-lite",
    "v5p": "v2-alpha-tpuv5",
    "v6e": "v2-alpha-tpuv6e",
}
REMOTE_DIR = "~/tpubench"  # in remote shell commands; scp paths are relative to ~
ARCHIVE = "/tmp/tpubench.tar.gz"
QUEUED_POLL_S = 30


def default_version(accelerator_type: str) -> str:
    """The runtime `--version` for an accelerator type such as v5p-16 or v5litepod-8."""
    prefix = accelerator_type.rsplit("-", 1)[0]
    if prefix not in RUNTIME_VERSIONS:
        raise SystemExit(
            f"error: no default --version for --accelerator-type={accelerator_type}; known "
            f"types start with {', '.join(RUNTIME_VERSIONS)}. Pass --version explicitly."
        )
    return RUNTIME_VERSIONS[prefix]


def _where(args: argparse.Namespace) -> list[str]:
    flags = [f"--zone={args.zone}"]
    return flags + ([f"--project={args.project}"] if args.project else [])


def _ssh(args: argparse.Namespace, command: str, worker: str = "all") -> list[str]:
    return ["gcloud", "compute", "tpus", "tpu-vm", "ssh", args.name, *_where(args),
            f"--worker={worker}", f"--command={command}"]


def create_commands(args: argparse.Namespace) -> list[list[str]]:
    """On-demand or spot: `tpu-vm create`. Queued: `queued-resources create` (+ a wait)."""
    version = args.version or default_version(args.accelerator_type)
    spot = ["--spot"] if args.spot else []
    if args.queued:
        return [
            ["gcloud", "compute", "tpus", "queued-resources", "create", args.name,
             f"--node-id={args.name}", *_where(args), f"--accelerator-type={args.accelerator_type}",
             f"--runtime-version={version}", *spot],
            wait_command(args),
        ]
    return [["gcloud", "compute", "tpus", "tpu-vm", "create", args.name, *_where(args),
             f"--accelerator-type={args.accelerator_type}", f"--version={version}", *spot]]


def wait_command(args: argparse.Namespace) -> list[str]:
    """The state query that `create --queued` repeats until the slice is ACTIVE."""
    return ["gcloud", "compute", "tpus", "queued-resources", "describe", args.name, *_where(args),
            "--format=value(state.state)"]


def install_commands(args: argparse.Namespace) -> list[list[str]]:
    """Put the code on every worker (git clone, or this checkout's HEAD as a tarball) and pip
    install it with the `tpu` extra (libtpu)."""
    pip = f'cd {REMOTE_DIR} && python3 -m pip install -e ".[tpu]"'
    if args.git_url:
        fetch = (f"rm -rf {REMOTE_DIR} && git clone {shlex.quote(args.git_url)} {REMOTE_DIR} && "
                 f"git -C {REMOTE_DIR} checkout {shlex.quote(args.git_ref)}")
        return [_ssh(args, f"set -e; {fetch} && {pip}")]
    unpack = (f"rm -rf {REMOTE_DIR} && mkdir -p {REMOTE_DIR} && "
              f"tar -xzf ~/tpubench.tar.gz -C {REMOTE_DIR}")
    return [
        ["git", "archive", "--format=tar.gz", f"--output={ARCHIVE}", args.git_ref],
        ["gcloud", "compute", "tpus", "tpu-vm", "scp", ARCHIVE, f"{args.name}:tpubench.tar.gz",
         *_where(args), "--worker=all"],
        _ssh(args, f"set -e; {unpack} && {pip}"),
    ]


def run_command(args: argparse.Namespace) -> list[str]:
    """The same command on all workers; logs stream back and stay in results/ on each worker."""
    if not args.command:
        raise SystemExit("error: run needs the command after `--`, e.g. -- tpubench run resnet")
    remote = (
        f"set -o pipefail; export PATH=$HOME/.local/bin:$PATH TPUBENCH_DISTRIBUTED=auto; "
        f"cd {REMOTE_DIR} && mkdir -p results && "
        f"{shlex.join(args.command)} 2>&1 | tee -a results/run_$(hostname).log"
    )
    return _ssh(args, remote)


def fetch_command(args: argparse.Namespace) -> list[str]:
    """Copy worker 0's results directory (process 0 writes the MLPerf log and summaries)."""
    local = args.local_dir or f"results/{args.name}"
    return ["gcloud", "compute", "tpus", "tpu-vm", "scp", "--recurse",
            f"{args.name}:tpubench/results", local, *_where(args), "--worker=0"]


def delete_command(args: argparse.Namespace) -> list[str]:
    """Delete the slice (for a queued resource: the request and its node, `--force`)."""
    if args.queued:
        return ["gcloud", "compute", "tpus", "queued-resources", "delete", args.name,
                *_where(args), "--force", "--quiet"]
    return ["gcloud", "compute", "tpus", "tpu-vm", "delete", args.name, *_where(args), "--quiet"]


def _execute(command: list[str], dry_run: bool) -> None:
    print(shlex.join(command), flush=True)
    if not dry_run:
        subprocess.run(command, check=True)


def _wait_active(args: argparse.Namespace) -> None:
    while True:
        state = subprocess.run(wait_command(args), check=True, capture_output=True,
                               text=True).stdout.strip()
        print(f"queued resource {args.name}: {state}", flush=True)
        if state == "ACTIVE":
            return
        if state in ("FAILED", "SUSPENDED"):
            raise SystemExit(f"error: queued resource {args.name} is {state}")
        time.sleep(QUEUED_POLL_S)


def do_create(args: argparse.Namespace) -> None:
    """Create the slice; for --queued, wait until it is ACTIVE."""
    if not args.accelerator_type:
        raise SystemExit("error: create needs --accelerator-type (e.g. v5p-16, v5litepod-8)")
    commands = create_commands(args)
    _execute(commands[0], args.dry_run)
    if args.queued:
        if args.dry_run:
            print(f"# repeated every {QUEUED_POLL_S} s until it prints ACTIVE:")
            print(shlex.join(commands[1]), flush=True)
        else:
            _wait_active(args)


def do_all(args: argparse.Namespace) -> None:
    """create -> install -> run -> fetch, then delete whatever happened."""
    do_create(args)
    try:
        for command in install_commands(args):
            _execute(command, args.dry_run)
        _execute(run_command(args), args.dry_run)
    finally:
        try:
            _execute(fetch_command(args), args.dry_run)
        finally:
            _execute(delete_command(args), args.dry_run)


def build_parser() -> argparse.ArgumentParser:
    """The CLI: subcommands sharing --name/--zone/--project/--dry-run."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--name", required=True, help="TPU VM (and queued resource) name")
    common.add_argument("--zone", required=True, help="e.g. us-east5-a")
    common.add_argument("--project", default="", help="default: gcloud's configured project")
    common.add_argument("--dry-run", action="store_true", help="print the commands only")
    common.add_argument("--queued", action="store_true",
                        help="the slice is a queued resource (create/delete through it)")
    slice_flags = argparse.ArgumentParser(add_help=False)
    slice_flags.add_argument("--accelerator-type", default="", help="e.g. v5p-16, v5litepod-8")
    slice_flags.add_argument("--version", default="", help="TPU software version (default by type)")
    slice_flags.add_argument("--spot", action="store_true", help="Spot VMs (preemptible)")
    source = argparse.ArgumentParser(add_help=False)
    source.add_argument("--git-url", default="", help="clone this on the workers (default: "
                        "copy this checkout's --git-ref with git archive)")
    source.add_argument("--git-ref", default="HEAD",
                        help="commit, branch or tag to install (default: %(default)s)")
    command = argparse.ArgumentParser(add_help=False)
    command.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    fetch = argparse.ArgumentParser(add_help=False)
    fetch.add_argument("--local-dir", default="", help="default: results/NAME")

    parser = argparse.ArgumentParser(
        prog="tpubench launch tpu-vm", description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Each action prints its own flags: tpubench launch tpu-vm ACTION --help.\n\n"
        "Examples:\n"
        "  tpubench launch tpu-vm all --name=tb --zone=us-east5-a --accelerator-type=v5p-16 "
        "--dry-run -- tpubench run resnet --config=full\n"
        "  tpubench launch tpu-vm create --name=tb --zone=us-east5-a --accelerator-type=v5p-16 "
        "--spot\n"
        "  tpubench launch tpu-vm delete --name=tb --zone=us-east5-a\n"
        "(or python tpubench/launch/tpu_vm.py ... without installing tpubench)")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("create", parents=[common, slice_flags], help="create the slice")
    sub.add_parser("install", parents=[common, source], help="install tpubench on all workers")
    sub.add_parser("run", parents=[common, command], help="run a command on all workers")
    sub.add_parser("fetch", parents=[common, fetch], help="copy results back from worker 0")
    sub.add_parser("delete", parents=[common], help="delete the slice")
    sub.add_parser("all", parents=[common, slice_flags, source, fetch, command],
                   help="create, install, run, fetch, delete")
    return parser


def main(argv: Sequence[str]) -> int:
    """Parse `argv` and print (with --dry-run) or run the commands; returns an exit status."""
    args = build_parser().parse_args(list(argv))
    if getattr(args, "command", None) and args.command[0] == "--":
        args.command = args.command[1:]
    try:
        if args.action == "create":
            do_create(args)
        elif args.action == "install":
            for cmd in install_commands(args):
                _execute(cmd, args.dry_run)
        elif args.action == "run":
            _execute(run_command(args), args.dry_run)
        elif args.action == "fetch":
            _execute(fetch_command(args), args.dry_run)
        elif args.action == "delete":
            _execute(delete_command(args), args.dry_run)
        else:
            do_all(args)
    except subprocess.CalledProcessError as e:
        print(f"error: {shlex.join(e.cmd)} exited with status {e.returncode}", file=sys.stderr)
        return e.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
