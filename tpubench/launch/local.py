"""`tpubench launch local --processes=N [--port=P] -- CMD ARGS...`: N processes on this machine.

Each child runs CMD with `TPUBENCH_COORDINATOR=localhost:P`, `TPUBENCH_NUM_PROCESSES=N` and
`TPUBENCH_PROCESS_ID=i`, which `tpubench.platform.distributed.initialize_from_env()` turns into one
JAX cluster (CPU collectives over gloo): the multi-host code paths, tested on one machine. Output is
streamed line by line with a `[pI] ` prefix. If one child fails, the others are stopped (SIGTERM,
then SIGKILL after `--grace-s`: JAX itself catches SIGTERM, so a blocked child would otherwise
wait forever). SIGTERM and SIGINT sent to the launcher are forwarded to every child. The exit
status is 0 when every child succeeded, else the first failure's (128+N for a signal).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

from tpubench.errors import UsageError
from tpubench.platform.distributed import ENV_COORDINATOR, ENV_NUM_PROCESSES, ENV_PROCESS_ID

USAGE = "tpubench launch local --processes=N [--port=P] [--grace-s=S] -- CMD [ARGS...]"
_POLL_S = 0.05


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would sys.exit(2); the CLI wants a UsageError.
        raise UsageError(f"{message}. Usage: {USAGE}")


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """Split `argv` at the first `--` into launcher flags and the command to run."""
    argv = list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    flags, command = argv[:split], argv[split + 1 :]
    parser = _Parser(
        prog="tpubench launch local", usage=USAGE, description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n"
        "  tpubench launch local --processes=2 -- tpubench run resnet --config=smoke\n"
        "  tpubench launch local --processes=4 --port=12400 -- python -m workloads.bert.main "
        "--config=smoke --workdir=/tmp/bert_4p")
    parser.add_argument("--processes", type=int, required=True, help="number of processes")
    parser.add_argument("--port", type=int, default=0,
                        help="coordinator port (default: 0, a free one)")
    parser.add_argument(
        "--grace-s", type=float, default=30.0,
        help="seconds a child has to exit after SIGTERM before it is killed (default: 30)",
    )
    if "--" not in argv and not {"-h", "--help"} & set(argv):  # --help needs no command
        raise UsageError(f"Missing `-- CMD`: the command to run goes after `--`. Usage: {USAGE}")
    args = parser.parse_args(flags)  # --help prints and exits 0 here
    if args.processes < 1:
        raise UsageError(f"--processes={args.processes}: need at least 1.")
    if not 0 <= args.port < 65536:
        raise UsageError(f"--port={args.port} is outside 0..65535.")
    if not command:
        raise UsageError(f"Nothing to run after `--`. Usage: {USAGE}")
    return args, command


def free_port() -> int:
    """A TCP port that was free a moment ago (the coordinator binds it shortly after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def child_env(
    base: Mapping[str, str], process_id: int, num_processes: int, coordinator: str
) -> dict[str, str]:
    """The environment of child `process_id`: `base` plus the three cluster variables."""
    env = dict(base)
    env[ENV_COORDINATOR] = coordinator
    env[ENV_NUM_PROCESSES] = str(num_processes)
    env[ENV_PROCESS_ID] = str(process_id)
    env.setdefault("PYTHONUNBUFFERED", "1")  # so lines arrive as they are printed
    return env


def exit_status(returncode: int) -> int:
    """A shell-style status: a child killed by signal N (Popen says -N) becomes 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def _pump(stream: IO[bytes], prefix: str, out: IO[str], lock: threading.Lock) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        with lock:
            out.write(f"{prefix}{line}\n")
            out.flush()
    stream.close()


class _Children:
    """The running children: signalling (each in its own process group) and reaping."""

    def __init__(self, procs: list[subprocess.Popen], grace_s: float):
        self.procs = procs
        self.grace_s = grace_s
        self.stop_deadline: float | None = None  # when SIGKILL follows a SIGTERM

    def signal_all(self, signum: int) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signum)
                except ProcessLookupError:  # exited between poll and kill
                    pass

    def stop(self) -> None:
        """SIGTERM every live child now; SIGKILL whoever is left after the grace period."""
        if self.stop_deadline is None:
            self.signal_all(signal.SIGTERM)
            self.stop_deadline = time.monotonic() + self.grace_s

    def running(self) -> bool:
        return any(proc.poll() is None for proc in self.procs)

    def enforce_deadline(self) -> None:
        if self.stop_deadline is not None and time.monotonic() >= self.stop_deadline:
            self.signal_all(signal.SIGKILL)


def run(
    command: Sequence[str],
    processes: int,
    port: int = 0,
    grace_s: float = 30.0,
    out: IO[str] | None = None,
    base_env: Mapping[str, str] | None = None,
) -> int:
    """Run `command` as `processes` cooperating processes; return the combined exit status."""
    out = sys.stdout if out is None else out
    coordinator = f"localhost:{port or free_port()}"
    base = os.environ if base_env is None else base_env
    lock = threading.Lock()
    procs: list[subprocess.Popen] = []
    pumps: list[threading.Thread] = []
    try:
        for i in range(processes):
            proc = subprocess.Popen(
                list(command), env=child_env(base, i, processes, coordinator),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: signals reach its children too
            )
            procs.append(proc)
            pump = threading.Thread(target=_pump, args=(proc.stdout, f"[p{i}] ", out, lock))
            pump.daemon = True
            pump.start()
            pumps.append(pump)
    except OSError as e:
        _Children(procs, 0.0).signal_all(signal.SIGKILL)
        raise UsageError(f"Cannot start {command[0]!r}: {e}.") from e

    children = _Children(procs, grace_s)
    received: list[int] = []

    def forward(signum: int, _frame) -> None:
        if received:  # a second Ctrl-C: stop waiting for a clean exit
            children.signal_all(signal.SIGKILL)
        received.append(signum)
        children.signal_all(signum)
        children.stop_deadline = children.stop_deadline or time.monotonic() + grace_s

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {}
    if in_main_thread:
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, forward)
    first_failure: int | None = None
    try:
        while children.running():
            for i, proc in enumerate(procs):
                code = proc.poll()
                if code not in (None, 0) and first_failure is None:
                    first_failure = exit_status(code)
                    with lock:
                        out.write(f"[launch] p{i} exited with status {first_failure}; "
                                  "stopping the others\n")
                        out.flush()
                    children.stop()
            children.enforce_deadline()
            time.sleep(_POLL_S)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        children.signal_all(signal.SIGKILL)  # only if we are leaving by an exception
        for proc in procs:
            proc.wait()
        for pump in pumps:
            pump.join(timeout=5)
    if first_failure is None:
        first_failure = next((exit_status(p.returncode) for p in procs if p.returncode), None)
    return first_failure or 0


def main(argv: list[str]) -> int:
    """Entry point of `tpubench launch local` (`argv` = the words after `local`)."""
    args, command = parse_args(argv)
    return run(command, processes=args.processes, port=args.port, grace_s=args.grace_s)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
