"""The `tpubench` command.

    tpubench list
    tpubench run WORKLOAD --config=mini [--workdir=DIR] [--runs=N] [--config.SECTION.KEY=VALUE ...]
    tpubench check LOG [--ruleset=0.7.0]
    tpubench report RESULTS_DIR [--out=DIR]            (tpubench.report.cli)
    tpubench infer WORKLOAD --config=... --scenario=... (tpubench.infer.cli)
    tpubench fit WORKLOAD --config=full --topology=v5p:2x2x2 (tpubench.fit)
    tpubench launch local --processes=N -- CMD ...      (tpubench.launch.local)
    tpubench launch tpu-vm|slurm|multinode ...          (tpubench.launch.*)
    tpubench prepare WORKLOAD --config=full [--config.KEY=VALUE ...]  (tpubench.prepare)

Bad input is a `UsageError`: one paragraph on stderr saying how to fix it, exit status 2, and
nothing computed or written.

SIGTERM and SIGINT (Ctrl-C) never print a traceback (`tpubench.loops.preemption`, installed
before anything heavy is imported): during a run, the run saves a checkpoint, says "rerun to
resume" and exits 0; before a run starts, one line and exit 0 (the rerun starts over); any other
subcommand prints one line and exits 128+N (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from tpubench.errors import UsageError
from tpubench.loops import preemption  # the standard library only

_COMMAND_HELP = (
    ("list", "the workloads, their configs and quality targets"),
    ("run", "train a workload with a config until it reaches its target; writes the MLPerf log"),
    ("check", "run the official MLPerf compliance checker on a log"),
    ("report", "scores, compliance verdicts, tables and plots of results or run directories"),
    ("infer", "serve a workload's model under the MLPerf LoadGen (Offline, Server, ...)"),
    ("fit", "compile a config for a TPU slice before renting it: memory, FLOPs, roofline"),
    ("prepare", "preprocess a workload's data once, before the runs that read it"),
    ("package", "lay out finished runs as an MLPerf v0.7 submission tree and check it"),
    ("launch", "run tpubench on several processes or machines (local, tpu-vm, slurm, multinode)"),
)


def _help() -> str:
    """`tpubench --help`: what each command does, the workloads, examples (for a user: no
    module names)."""
    from tpubench import helptext

    width = max(len(name) for name, _ in _COMMAND_HELP)
    commands = "\n".join(f"  {name:<{width}}  {about}" for name, about in _COMMAND_HELP)
    return (
        "usage: tpubench COMMAND [ARGS...]\n\nMLPerf Training and Inference v0.7 benchmarks in "
        f"JAX.\n\nCommands:\n{commands}\n\n"
        + helptext.paragraph("`tpubench COMMAND --help` shows a command's flags, their defaults "
                             "and examples. Bad input gets one paragraph on stderr saying how to "
                             "fix it, exit status 2, and nothing is written.") + "\n\n"
        + helptext.epilog("tpubench list", "tpubench run resnet --config=mini",
                          "tpubench report results --out=report",
                          "tpubench infer resnet --config=mini --scenario=Offline",
                          "tpubench fit resnet --config=full --topology=v5p:2x2x2"))


# Subcommands implemented in their own modules: name -> "module:function(argv) -> int".
_DELEGATES = {
    "report": "tpubench.report.cli:main",
    "infer": "tpubench.infer.cli:main",
    "fit": "tpubench.fit:main",
    "prepare": "tpubench.prepare:main",
    "package": "tpubench.package:main",
}


class _Parser(argparse.ArgumentParser):
    """argparse that raises `UsageError` (one paragraph, exit 2) instead of printing its own."""

    def error(self, message: str):
        usage = " ".join(self.format_usage().split()).removeprefix("usage: ")
        raise UsageError(f"{message}. Usage: {usage} (--help for more).")


def _cmd_list(argv: list[str]) -> int:
    from tpubench import config as config_lib
    from tpubench import helptext, registry

    parser = _Parser(prog="tpubench list", formatter_class=helptext.Formatter,
                     description="The workloads, each with its MLPerf benchmark name, configs, "
                     "datasets and quality targets.",
                     epilog=helptext.epilog("tpubench list", "tpubench list --variants",
                                            with_workloads=False))
    parser.add_argument("--variants", action="store_true",
                        help="the variants of each workload instead: which config key picks "
                        "which class, and the configs of each")
    if parser.parse_args(argv).variants:
        return _list_variants()
    # No workload class is imported (it would import JAX): the listing takes well under 2 s.
    for name in registry.names():
        print(f"{name}  (MLPerf: {registry.mlperf_name(name)})")
        configs = {n: config_lib.load(name, n) for n in config_lib.config_names(name)}
        width = max(len(n) for n in configs)  # columns aligned per workload
        data_width = max(len(c.data.dataset) for c in configs.values())
        for cfg_name, cfg in configs.items():
            kind = "MLPerf closed" if cfg.is_mlperf else "not MLPerf"
            if cfg.eval.get("target_provisional", False):
                kind += ("; target provisional: not reached by every measured run (its "
                         "docstring says which)")
            op = ">=" if cfg.eval.higher_is_better else "<="
            several = cfg.eval.get("target_values") or {}
            target = (" and ".join(f"{k} {op} {v}" for k, v in several.items()) if several
                      else f"{cfg.eval.target_metric} {op} {cfg.eval.target_value}")
            print(f"  --config={cfg_name:<{width}} {cfg.data.dataset:<{data_width}} target {target}"
                  f"  [{kind}]")
            needs = config_lib.closed_needs(name, cfg_name) if cfg.is_mlperf else ""
            if needs:
                print(f"  {'':<{width + 9}} closed needs: {needs}")
    return 0


def _list_variants() -> int:
    """`tpubench list --variants`: per workload with variants, the config key that picks one
    (`tpubench.registry.VARIANT_KEYS`), then each variant: its class, what it is, its configs."""
    from tpubench import config as config_lib
    from tpubench import registry

    for name in registry.names():
        entries = registry.variants(name)
        if not entries:
            continue
        key, default = registry.VARIANT_KEYS[name]
        print(f"{name}  (variant: {key}; default {default})")
        picked: dict[str, list[str]] = {e: [] for e in entries}
        for cfg_name in config_lib.config_names(name):
            picked[registry.variant(name, config_lib.load(name, cfg_name))].append(cfg_name)
        width = max(len(e) for e in entries)
        for entry in entries:
            cls, about = registry.describe(entry)
            print(f"  {entry:<{width}}  {cls}: {about}")
            print(f"  {'':<{width}}  configs: {', '.join(picked[entry]) or '(none)'}")
    return 0


RUN_USAGE = ("tpubench run WORKLOAD --config=CONFIG [--workdir=DIR] [--results_root=DIR] "
             "[--runs=N] [--config.SECTION.KEY=VALUE ...]")


def _run_flags(fv) -> None:
    from absl import flags

    flags.DEFINE_string("workdir", None, "the run directory (default: the next free "
                        "RESULTS_ROOT/<mlperf|mini>/<platform>/WORKLOAD/CONFIG/run_<i>)",
                        flag_values=fv)
    flags.DEFINE_string("results_root", "results", "where default run directories go",
                        flag_values=fv)
    flags.DEFINE_integer("runs", None, "runs of this config with seeds seed, seed+1, ... scored "
                         "together (default: the MLPerf v0.7 count for an MLPerf config, else 1)",
                         flag_values=fv)


def parse_run(argv: list[str]):
    """(config, workdir or None, results_root, runs) of `tpubench run`'s words: the workload
    first, then flags parsed by `tpubench.config.parse_command_line` (the absl mains' parser)."""
    from tpubench import config as config_lib
    from tpubench import entry, registry

    if not argv or argv[0].startswith("-"):
        raise UsageError(f"the following arguments are required: workload (first, before the "
                         f"flags). Usage: {RUN_USAGE}")
    workload, rest = argv[0], argv[1:]
    registry.workload_class(workload)  # unknown workload -> UsageError
    cfg, fv, positional = config_lib.parse_command_line(workload, rest, _run_flags,
                                                        usage=RUN_USAGE)
    if positional:
        raise UsageError(f"unrecognized arguments: {' '.join(positional)}. Usage: {RUN_USAGE}")
    entry.check_workload(cfg, workload, entry._config_arg(rest))
    from tpubench.loops import multirun

    runs = multirun.default_runs(cfg) if fv.runs is None else fv.runs
    multirun.check_runs(runs)
    return cfg, fv.workdir, fv.results_root, runs


def run_help() -> str:
    """`tpubench run --help`: usage, every flag with its default, the workloads, examples."""
    from tpubench import helptext

    pairs = [("--config=CONFIG", "a config name of WORKLOAD (mini, full, ...: `tpubench list` "
              "shows them) or a config file; required")]
    pairs += helptext.absl_flags(_run_flags, {"workdir": "DIR", "results_root": "DIR", "runs": "N"})
    return (
        f"usage: {RUN_USAGE}\n\n"
        + helptext.paragraph(
            "Train WORKLOAD with CONFIG until it reaches the config's quality target or its "
            "budget. The run directory gets the MLPerf log (mlperf_log.txt), summary.json, "
            "metrics.jsonl, TensorBoard files and checkpoints; a rerun into the directory of an "
            "interrupted run resumes it.")
        + "\n\nFlags:\n" + helptext.rows([*pairs, helptext.OVERRIDE_ROW]) + "\n\n"
        + helptext.epilog("tpubench run resnet --config=mini",
                          "tpubench run bert --config=mini --config.run.seed=3 "
                          "--workdir=results/bert_seed3",
                          "tpubench run resnet --config=full --runs=5 "
                          "--results_root=/data/results"))


def _cmd_run(argv: list[str]) -> int:
    if any(a in ("-h", "--help", "--helpshort", "--helpfull") for a in argv):
        print(run_help())
        return 0
    cfg, workdir, results_root, runs = parse_run(argv)

    from tpubench import entry

    entry.check_workdir(results_root if workdir is None else workdir)
    entry.note_division(cfg)

    from tpubench.loops import ending, multirun
    from tpubench.loops import run as train
    from tpubench.platform import chips, compile_cache, distributed

    compile_cache.enable(cfg)  # before the first compile (--config.run.compile_cache=false: off)
    distributed.initialize_from_env()  # before any JAX computation; no-op for one process
    import jax

    dirs = multirun.run_dirs(cfg, runs, workdir, results_root, chips.platform_name(jax.devices()))
    # Each run's end as it ends (a block on stdout, why on stderr unless it succeeded); the
    # machine-readable result is each run's summary.json.
    summaries = multirun.run_series(cfg, dirs, train.train_and_evaluate, on_end=ending.report)
    if runs > 1:
        scored = multirun.score(cfg, dirs)
        if jax.process_index() == 0:
            multirun.write_score(dirs, scored, workdir)
        print(multirun.summary_line(scored))
    return 0 if all(s["status"] in ("success", "preempted") for s in summaries) else 1


def _checker_rulesets(usage: str) -> list[str]:
    """The rulesets the installed `mlperf_logging.compliance_checker` has for `usage`."""
    import pathlib

    from mlperf_logging import compliance_checker

    root = pathlib.Path(compliance_checker.__file__).parent
    prefix = f"{usage}_"
    return sorted(p.name.removeprefix(prefix) for p in root.iterdir()
                  if p.is_dir() and p.name.startswith(prefix) and not p.name.endswith("_warn"))


def _cmd_check(argv: list[str]) -> int:
    from tpubench import helptext
    from tpubench.mlperf import mllog

    parser = _Parser(prog="tpubench check", formatter_class=helptext.Formatter,
                     description=helptext.paragraph(
                         "Run the official MLPerf compliance checker (mlperf_logging's "
                         "compliance_checker) on a training log; prints its output and VALID "
                         "(exit 0) or INVALID (exit 1)."),
                     epilog=helptext.epilog("tpubench check results/mini/1xcpu/resnet/mini/run_0/"
                                            "mlperf_log.txt", with_workloads=False))
    parser.add_argument("log", help="an MLPerf log, e.g. RUN_DIR/mlperf_log.txt")
    parser.add_argument("--ruleset", default="0.7.0", help="the checker's ruleset version")
    parser.add_argument("--usage", default="training", choices=("training", "hpc"),
                        help="the checker's benchmark family")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.log):
        raise UsageError(f"No log file at {args.log!r}. Pass the path of an MLPerf log, e.g. "
                         "results/.../run_0/mlperf_log.txt.")
    known = _checker_rulesets(args.usage)
    if args.ruleset not in known:
        raise UsageError(f"--ruleset={args.ruleset!r} is not a {args.usage} ruleset of the "
                         f"installed compliance checker. Known: {', '.join(known)}.")
    result = mllog.check_compliance(args.log, args.usage, args.ruleset)
    print(result.output)
    print("VALID" if result.valid else "INVALID")
    return 0 if result.valid else 1


# `tpubench launch NAME ...`: every launcher lives in tpubench/launch/ (one place).
_LAUNCHERS = {"local": "local", "tpu-vm": "tpu_vm", "slurm": "slurm", "multinode": "multinode"}


LAUNCH_HELP = """usage: tpubench launch LAUNCHER [FLAGS...] [-- CMD ARGS...]

Run tpubench on several processes or machines; each launcher prints its own --help.

Launchers:
  local      N processes on this machine as one JAX cluster (the multi-host code paths)
  tpu-vm     a Cloud TPU VM slice: create, install tpubench, run, fetch results, delete
  slurm      render and submit a SLURM batch job: N nodes x G GPUs, one process per GPU
  multinode  plain jax.distributed over ssh: one process per host

Examples:
  tpubench launch local --processes=2 -- tpubench run resnet --config=smoke
  tpubench launch tpu-vm all --name=tb --zone=us-east5-a --accelerator-type=v5p-16 --dry-run \\
      -- tpubench run resnet --config=full
  tpubench launch slurm --workload=resnet --config=full --nodes=2 --dry-run
  tpubench launch multinode --hosts=h0,h1 --dry-run -- tpubench run resnet --config=full"""


def _cmd_launch(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(LAUNCH_HELP)
        return 0
    if not argv or argv[0] not in _LAUNCHERS:
        raise UsageError(
            "Usage: tpubench launch local --processes=N -- CMD ARGS..., or tpubench launch "
            "{tpu-vm,slurm,multinode} ARGS... (for example "
            "`tpubench launch tpu-vm all --name=tb --zone=ZONE --accelerator-type=v5p-16 "
            "--dry-run -- tpubench run resnet --config=full`); each prints its own --help.")
    module = importlib.import_module(f"tpubench.launch.{_LAUNCHERS[argv[0]]}")
    return module.main(argv[1:])


_COMMANDS = {"list": _cmd_list, "run": _cmd_run, "check": _cmd_check, "launch": _cmd_launch}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `tpubench` console script."""
    preemption.install()  # first, before JAX is imported: SIGTERM/SIGINT at any moment
    argv = list(sys.argv[1:] if argv is None else argv)
    names = sorted(list(_COMMANDS) + list(_DELEGATES))
    if not argv or argv[0] in ("-h", "--help"):
        print(_help())
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    try:
        if cmd in _COMMANDS:
            return _COMMANDS[cmd](rest)
        if cmd in _DELEGATES:
            module, fn = _DELEGATES[cmd].split(":")
            return getattr(importlib.import_module(module), fn)(rest)
        raise UsageError(f"Unknown command {cmd!r}. Commands: {', '.join(names)}.")
    except UsageError as e:
        print(f"tpubench: error: {e}", file=sys.stderr)
        return 2
    except BaseException as e:  # a signal (see preemption.as_interrupt); anything else re-raised
        interrupt = preemption.as_interrupt(e)
        if interrupt is None:
            raise
        _interrupted(cmd, interrupt)


def _interrupted(cmd: str, e: preemption.PreemptedBeforeRun) -> NoReturn:
    """One line, the documented status (module docstring), and the end of the process."""
    if cmd == "run":
        preemption.end_process(str(e), 0)
    preemption.end_process(
        f"{cmd} interrupted by {preemption.signal_name(e.signum)} before it finished; nothing "
        "it had finished is lost. Rerun the same command to do it again.", e.exit_status)


if __name__ == "__main__":
    sys.exit(main())
