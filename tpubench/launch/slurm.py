"""Render and submit a SLURM batch job: N nodes x G GPUs, one tpubench process per GPU.

    python tpubench/launch/slurm.py --workload=resnet --config=full --nodes=4 --gpus-per-node=8 \
        [--partition=P] [--account=A] [--time=04:00:00] [--dry-run] [-- --config.run.seed=1 ...]

The script (from `tpubench/launch/templates/slurm.sbatch`) runs
`srun python -m workloads.<workload>.main --config=...` on every task; JAX finds the cluster in the
`SLURM_*` variables (see `tpubench.platform.distributed`). `--dry-run` prints the script and the
`sbatch` command; otherwise the script is written to `--script` and submitted. Needs only Python.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import shlex
import string
import subprocess
import sys
from collections.abc import Sequence

TEMPLATE = pathlib.Path(__file__).resolve().parent / "templates" / "slurm.sbatch"
REPO = pathlib.Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    """The CLI flags (overrides for the workload come after `--`)."""
    p = argparse.ArgumentParser(
        prog="tpubench launch slurm", description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n"
        "  tpubench launch slurm --workload=resnet --config=full --nodes=2 --dry-run\n"
        "  tpubench launch slurm --workload=bert --config=full --nodes=4 --gpus-per-node=8 "
        "--partition=gpu -- --config.run.seed=1\n"
        "(or python tpubench/launch/slurm.py ... without installing tpubench)")
    p.add_argument("--workload", required=True, help="workloads/<name>, e.g. resnet")
    p.add_argument("--config", required=True, help="config name or path, e.g. full")
    p.add_argument("--nodes", type=int, required=True, help="number of nodes")
    p.add_argument("--gpus-per-node", type=int, default=8,
                   help="GPUs per node, one process each (default: %(default)s)")
    p.add_argument("--cpus-per-task", type=int, default=12,
                   help="CPUs of each process (default: %(default)s)")
    p.add_argument("--time", default="04:00:00",
                   help="wall-clock limit HH:MM:SS (default: %(default)s)")
    p.add_argument("--partition", default="", help="SLURM partition (default: the cluster's)")
    p.add_argument("--account", default="", help="SLURM account (default: yours)")
    p.add_argument("--job-name", default="", help="default: tpubench-<workload>-<config>")
    p.add_argument("--workdir", default=str(REPO),
                   help="checkout on the shared filesystem (default: this checkout)")
    p.add_argument("--python", default="python",
                   help="interpreter on the nodes (default: %(default)s)")
    p.add_argument("--log-dir", default="results/slurm",
                   help="where the job's logs go (default: %(default)s)")
    p.add_argument("--script", default="", help="where to write it (default: LOG_DIR/JOB.sbatch)")
    p.add_argument("--dry-run", action="store_true", help="print the script and sbatch command")
    p.add_argument("overrides", nargs=argparse.REMAINDER, help="-- --config.KEY=VALUE ...")
    return p


def render(args: argparse.Namespace) -> str:
    """The batch script for `args` (pure)."""
    if args.nodes < 1 or args.gpus_per_node < 1:
        raise SystemExit("error: --nodes and --gpus-per-node must be at least 1")
    if not re.fullmatch(r"\w+", args.workload):
        raise SystemExit(f"error: --workload={args.workload!r} is not a workload name")
    extra = [f"#SBATCH --partition={args.partition}"] if args.partition else []
    extra += [f"#SBATCH --account={args.account}"] if args.account else []
    overrides = [o for o in args.overrides if o != "--"]
    return string.Template(TEMPLATE.read_text()).substitute(
        job_name=job_name(args),
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        cpus_per_task=args.cpus_per_task,
        time=args.time,
        log_dir=args.log_dir,
        extra_sbatch="\n".join(extra),
        workdir=shlex.quote(args.workdir),
        python=shlex.quote(args.python),
        workload=args.workload,
        config=shlex.quote(args.config),
        run_dir=f"{args.log_dir}/{job_name(args)}-${{SLURM_JOB_ID}}",
        overrides="".join(f" {shlex.quote(o)}" for o in overrides),
    )


def job_name(args: argparse.Namespace) -> str:
    """`--job-name`, or tpubench-<workload>-<config stem>."""
    return args.job_name or f"tpubench-{args.workload}-{pathlib.Path(args.config).stem}"


def script_path(args: argparse.Namespace) -> str:
    """Where the rendered script goes."""
    return args.script or f"{args.log_dir}/{job_name(args)}.sbatch"


def main(argv: Sequence[str]) -> int:
    """Print (--dry-run) or write and submit the job; returns sbatch's exit status."""
    args = build_parser().parse_args(list(argv))
    script = render(args)
    command = ["sbatch", script_path(args)]
    if args.dry_run:
        print(f"# {script_path(args)}")
        print(script, end="")
        print(shlex.join(command))
        return 0
    path = pathlib.Path(script_path(args))
    path.parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.log_dir).mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    print(shlex.join(command), flush=True)
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
