"""The absl entry point every `workloads/<name>/main.py` uses (Flax-example shape).

    python -m workloads.resnet.main --config=workloads/resnet/configs/mini.py --workdir=DIR \\
        [--config.KEY=VALUE ...]

`--config` takes a config file or a config name (`--config=mini`). Overrides are parsed by
`tpubench.config.parse_command_line` (`ml_collections.config_flags` rules) exactly as `tpubench
run` parses them (one parser, one set of rules, the same closed/open division logic). Bad input
(an unknown flag or key, a missing config file, a workdir that is a file) is a `UsageError`: one
paragraph on stderr, exit status 2, nothing written.
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Sequence

from absl import flags, logging

from tpubench import config as config_lib
from tpubench.errors import UsageError
from tpubench.loops import preemption

USAGE = ("python -m workloads.{name}.main --config=CONFIG --workdir=DIR [--config.KEY=VALUE ...] "
         "(CONFIG: a config name such as mini, or a file such as "
         "workloads/{name}/configs/mini.py)")


def help_text(workload_name: str) -> str:
    """`--help` of `python -m workloads.<name>.main`: usage, flags, the workload's configs, the
    other workloads, examples."""
    from tpubench import helptext

    rows = [("--config=CONFIG", f"a config name of {workload_name} or a config file "
             f"(workloads/{workload_name}/configs/<config>.py); required")]
    rows += helptext.absl_flags(_define_flags, {"workdir": "DIR"})
    configs = ", ".join(config_lib.config_names(workload_name))
    return (
        f"usage: {USAGE.format(name=workload_name)}\n\n"
        + helptext.paragraph(f"Train {workload_name} with CONFIG until it reaches the config's "
                             "quality target or its budget (the same run as `tpubench run "
                             f"{workload_name}`).")
        + "\n\nFlags:\n" + helptext.rows([*rows, helptext.OVERRIDE_ROW]) + "\n\n"
        + helptext.paragraph(f"Configs of {workload_name}: {configs}.") + "\n\n"
        + helptext.epilog(f"python -m workloads.{workload_name}.main --config=mini "
                          f"--workdir=results/{workload_name}_mini",
                          f"python -m workloads.{workload_name}.main --config=smoke "
                          f"--workdir=/tmp/{workload_name}_smoke --config.run.seed=3"))


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
    check_workload(cfg, workload_name, config)
    return cfg


def check_workload(cfg, workload_name: str, config: str) -> None:
    """`UsageError` when `cfg` (named `config` on the command line) is another workload's."""
    if cfg.workload != workload_name:
        raise UsageError(
            f"--config={config!r} is a {cfg.workload!r} config, not a {workload_name!r} one. Run "
            f"python -m workloads.{cfg.workload}.main with it, or pass a {workload_name} config.")


def _define_flags(fv: flags.FlagValues) -> None:
    flags.DEFINE_string("workdir", None, "the run directory: MLPerf log, summary.json, "
                        "checkpoints (created if missing; a rerun into the directory of an "
                        "interrupted run resumes it); required", flag_values=fv)


def parse(workload_name: str, argv: Sequence[str]):
    """(config, workdir) of an absl main's command line (flags after the program name), parsed
    by `tpubench.config.parse_command_line`, the parser `tpubench run` uses."""
    usage = USAGE.format(name=workload_name)
    cfg, fv, positional = config_lib.parse_command_line(
        workload_name, argv, _define_flags, usage=usage)
    if positional:
        raise UsageError(f"Unexpected arguments: {' '.join(positional)}. Usage: {usage}")
    if not fv.workdir:
        raise UsageError(f"Missing --workdir. Usage: {usage}")
    check_workload(cfg, workload_name, _config_arg(argv))
    return cfg, check_workdir(fv.workdir)


def _config_arg(argv: Sequence[str]) -> str:
    """The --config value as written (for messages)."""
    for i, a in enumerate(argv):
        if a.startswith(("--config=", "-config=")):
            return a.split("=", 1)[1]
        if a in ("--config", "-config") and i + 1 < len(argv):
            return argv[i + 1]
    return ""


def main(workload_name: str, argv: Sequence[str]) -> int:
    """Parse `argv` (flags after the program name), train to target; the exit status."""
    if any(a in ("-h", "--help", "--helpshort", "--helpfull") for a in argv):
        print(help_text(workload_name))
        return 0
    try:
        cfg, workdir = parse(workload_name, argv)
        note_division(cfg)

        from tpubench.loops import ending
        from tpubench.loops import run as train
        from tpubench.platform import compile_cache, distributed

        compile_cache.enable(cfg)  # before the first compile (off: run.compile_cache=false)
        logging.set_verbosity(logging.WARNING)  # orbax/absl INFO chatter; progress is printed
        distributed.initialize_from_env()  # before any JAX computation; no-op alone
        summary = train.train_and_evaluate(cfg, workdir)
        ending.report(summary, cfg)  # the end a person reads; why on stderr unless a success
    except UsageError as e:
        print(f"tpubench: error: {e}", file=sys.stderr)
        return 2
    return 0 if summary["status"] in ("success", "preempted") else 1


def run(workload_name: str) -> None:
    """`main` on this process's command line; never returns. (Not `absl.app.run`: its handler
    for a non-zero exit reads flags that a failed parse left unparsed, and prints a traceback.)"""
    with preemption.ends_cleanly():  # the main.py's block already; again for other callers
        status = main(workload_name, sys.argv[1:])
    sys.exit(status)


def note_division(cfg) -> None:
    """Say on stderr, before the run, when overrides made an MLPerf config open division."""
    reasons = tuple(cfg.submission.get("open_reasons", ()))
    if reasons:
        print(f"tpubench: note: these overrides make this {cfg.workload} {cfg.config_name} run "
              "open division (is_mlperf false; not a closed MLPerf result): "
              + "; ".join(reasons), file=sys.stderr)
