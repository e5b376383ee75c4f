"""The absl entry point every `workloads/<name>/main.py` uses (Flax-example shape).

    python -m workloads.resnet.main --config=workloads/resnet/configs/mini.py --workdir=DIR \\
        [--config.KEY=VALUE ...]

`--config` takes a config file or a config name (`--config=mini`). Overrides are parsed by
`tpubench.config` exactly as `tpubench run` parses them (one parser, one set of rules, the same
closed/open division logic). Bad input (an unknown flag or key, a missing config file, a workdir
that is a file) is a `UsageError`: one paragraph on stderr, exit status 2, nothing written.
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Sequence

from absl import flags, logging

from tpubench import config as config_lib
from tpubench import preemption
from tpubench.errors import UsageError

USAGE = ("python -m workloads.{name}.main --config=CONFIG --workdir=DIR [--config.KEY=VALUE ...] "
         "(CONFIG: a config name such as mini, or a file such as "
         "workloads/{name}/configs/mini.py)")


HELP = """  --config    a config name (tpubench list shows them) or a config file
  --workdir   the run directory: log, summary.json, checkpoints (created if missing; a rerun
              with the same workdir resumes a preempted run)
  --config.KEY=VALUE   override a config key, e.g. --config.global_batch_size=64 (the same
              parser as `tpubench run`; overrides that change an MLPerf benchmark make the run
              open division)"""


def check_workdir(workdir: str | os.PathLike) -> pathlib.Path:
    """`UsageError` unless `workdir` is a directory, or can be created as one, and is writable."""
    path = pathlib.Path(workdir)
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"--workdir={os.fspath(workdir)!r} is a file, not a directory. Pass a directory "
            "(it is created if it does not exist), e.g. --workdir=results/my_run.")
    existing = path if path.exists() else next(
        (p for p in path.absolute().parents if p.exists()), pathlib.Path("/"))
    if not existing.is_dir():
        raise UsageError(
            f"--workdir={os.fspath(workdir)!r} cannot be created: {existing} is a file. Pass a "
            "directory path whose parents are directories.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(
            f"--workdir={os.fspath(workdir)!r}: {existing} is not writable by this user. Pass a "
            "directory you can write to.")
    return path


def load_config(workload_name: str, config: str, overrides: Sequence[str]):
    """The config a command line names, with overrides; `UsageError` for another workload's."""
    cfg = config_lib.load(workload_name, config, overrides)
    if cfg.workload != workload_name:
        raise UsageError(
            f"--config={config!r} is a {cfg.workload!r} config, not a {workload_name!r} one. Run "
            f"python -m workloads.{cfg.workload}.main with it, or pass a {workload_name} config.")
    return cfg


def _define_flags() -> None:
    if "workdir" not in flags.FLAGS:
        flags.DEFINE_string("workdir", None, "Run directory (log, summary, checkpoints).")
        flags.DEFINE_string("config", None, "Config name (mini, full, ...) or config file path.")


def main(workload_name: str, argv: Sequence[str]) -> int:
    """Parse `argv` (flags after the program name), train to target; the exit status."""
    _define_flags()
    usage = USAGE.format(name=workload_name)
    if any(a in ("-h", "--help", "--helpshort", "--helpfull") for a in argv):
        print(f"usage: {usage}\n\n{HELP}")
        return 0
    try:
        overrides, rest = config_lib.split_args(argv)
        flags.FLAGS.unparse_flags()  # values of an earlier call (in-process tests) do not stick
        try:
            positional = flags.FLAGS([sys.argv[0], *rest])[1:]
        except flags.Error as e:
            raise UsageError(f"{e}. Usage: {usage}") from None
        if positional:
            raise UsageError(f"Unexpected arguments: {' '.join(positional)}. Usage: {usage}")
        missing = [f"--{n}" for n in ("config", "workdir") if not flags.FLAGS[n].value]
        if missing:
            raise UsageError(f"Missing {' and '.join(missing)}. Usage: {usage}")
        cfg = load_config(workload_name, flags.FLAGS.config, overrides)
        workdir = check_workdir(flags.FLAGS.workdir)
        note_division(cfg)

        from tpubench import compile_cache, distributed, train

        compile_cache.enable(cfg)  # before the first compile (--config.compile_cache=false: off)
        logging.set_verbosity(logging.WARNING)  # orbax/absl INFO chatter; progress is printed
        distributed.initialize_from_env()  # before any JAX computation; no-op alone
        summary = train.train_and_evaluate(cfg, workdir)
    except UsageError as e:
        print(f"tpubench: error: {e}", file=sys.stderr)
        return 2
    return 0 if summary["status"] in ("success", "preempted") else 1


def run(workload_name: str) -> None:
    """`main` on this process's command line; never returns. (Not `absl.app.run`: its handler
    for a non-zero exit reads flags that a failed parse left unparsed, and prints a traceback.)"""
    preemption.install()  # first: SIGTERM at any moment is handled (tpubench.preemption)
    try:
        sys.exit(main(workload_name, sys.argv[1:]))
    except preemption.PreemptedBeforeRun as e:
        print(f"tpubench: {e}", file=sys.stderr)
        sys.exit(0)


def note_division(cfg) -> None:
    """Say on stderr, before the run, when overrides made an MLPerf config open division."""
    reasons = tuple(cfg.get("open_reasons", ()))
    if reasons:
        print(f"tpubench: note: these overrides make this {cfg.workload} {cfg.config_name} run "
              "open division (is_mlperf false; not a closed MLPerf result): "
              + "; ".join(reasons), file=sys.stderr)
