"""`tpubench package`: the MLPerf Training v0.7 submission tree from finished runs.

    tpubench package --system-template=SYSTEM.json        # once: the host's fields filled in
    tpubench package OUT --system=SYSTEM.json RUN_DIR...  # then: the tree, checked

Sources are run workdirs (their `mlperf_log.txt`), directories holding them at any depth (what
`tpubench run --runs=N` writes), or MLPerf log files. Each log names its benchmark
(`submission_benchmark`) and division (`submission_division`). The tree is the one the v0.7
submission rules and `mlperf_logging`'s tools read:

    OUT/<submitter>/systems/<system>.json              the system description (every v0.7 field)
    OUT/<submitter>/results/<system>/<benchmark>/result_<i>.txt
    OUT/<submitter>/benchmarks/<benchmark>/implementations/tpubench/README.md  (the commands)

`<system>` is the system file's name without `.json`. Before anything is written: every run
must have ended (`run_stop`), all must share the system's division, each benchmark must have
the v0.7 number of runs (`rules.required_runs`: 5 or 10), and no result folder may exist
already (results are never overwritten). Then the official package checker runs on the tree
(`python -m mlperf_logging.package_checker DIR training 0.7.0`); its verdict is the exit status.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

from tpubench.errors import UsageError
from tpubench.mlperf import rules

# The v0.7 system description's fields (every one of them in the v0.7 submissions' systems/*.json,
# e.g. Fujitsu's and Google's), in their order there.
SYSTEM_FIELDS = (
    "submitter", "division", "status", "system_name", "number_of_nodes",
    "host_processors_per_node", "host_processor_model_name", "host_processor_core_count",
    "host_processor_vcpu_count", "host_processor_frequency", "host_processor_caches",
    "host_processor_interconnect", "host_memory_capacity", "host_storage_type",
    "host_storage_capacity", "host_networking", "host_networking_topology",
    "host_memory_configuration", "accelerators_per_node", "accelerator_model_name",
    "accelerator_host_interconnect", "accelerator_frequency", "accelerator_on-chip_memories",
    "accelerator_memory_configuration", "accelerator_memory_capacity", "accelerator_interconnect",
    "accelerator_interconnect_topology", "cooling", "hw_notes", "framework",
    "other_software_stack", "operating_system", "sw_notes",
)
LOG_NAME = "mlperf_log.txt"
IMPLEMENTATION = "tpubench"
CHECKER_OK = "PACKAGE CHECKER FOUND NO ERRORS"


def host_fields() -> dict[str, str]:
    """What this host can say of itself (processor, memory, OS, software, accelerators); the
    software as a run's provenance.json records it (`provenance.versions`)."""
    import jax

    from tpubench.loops import provenance

    cpu = platform.processor() or platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    devices = jax.local_devices()
    accelerated = devices[0].platform != "cpu"
    return {
        "number_of_nodes": str(jax.process_count()),
        "host_processor_model_name": cpu,
        "host_processor_vcpu_count": str(os.cpu_count()),
        "host_memory_capacity": f"{memory:.0f}GB",
        "accelerators_per_node": str(len(devices) if accelerated else 0),
        "accelerator_model_name": devices[0].device_kind if accelerated else "N/A",
        "framework": f"JAX {jax.__version__}",
        "other_software_stack": ", ".join(f"{name} {version}" for name, version
                                          in provenance.versions().items() if name != "jax"),
        "operating_system": platform.platform(),
    }


def write_template(path: str | os.PathLike) -> dict[str, str]:
    """Write a system description with every v0.7 field, the host's filled in, the rest ""."""
    path = pathlib.Path(path)
    if path.exists():
        raise UsageError(f"{path} exists: a system description is never overwritten. Edit it, "
                         "or pass another path to --system-template.")
    fields = {k: "" for k in SYSTEM_FIELDS} | host_fields()
    path.write_text(json.dumps(fields, indent=1) + "\n")
    return fields


def read_system(path: str | os.PathLike) -> dict[str, str]:
    """The system description at `path`; `UsageError` naming every field missing or empty."""
    path = pathlib.Path(path)
    try:
        desc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"--system={path}: not a readable JSON file ({e}). Write one with "
                         f"`tpubench package --system-template={path}` and fill it in.") from e
    empty = [k for k in SYSTEM_FIELDS if not str(desc.get(k, "")).strip()]
    if empty:
        raise UsageError(f"--system={path} leaves {len(empty)} of the v0.7 system fields empty "
                         f"or out: {', '.join(empty)}. Fill each in (\"N/A\" where one does not "
                         "apply); `tpubench package --system-template=NEW.json` writes every "
                         "field with what this host can say.")
    if str(desc["division"]).lower() not in ("closed", "open"):
        raise UsageError(f"--system={path}: division {desc['division']!r} is 'closed' or 'open'.")
    return desc


def find_logs(sources: list[str]) -> list[pathlib.Path]:
    """The MLPerf logs of `sources` (a log file, a workdir, or a directory of workdirs)."""
    logs = []
    for source in sources:
        p = pathlib.Path(source)
        if p.is_file():
            logs.append(p)
        elif p.is_dir():
            found = sorted(p.rglob(LOG_NAME))
            if not found:
                raise UsageError(f"{p} holds no {LOG_NAME}: pass run directories (or the "
                                 "directory `tpubench run --runs=N` wrote) or MLPerf log files.")
            logs += found
        else:
            raise UsageError(f"{p} does not exist: pass run directories or MLPerf log files.")
    return logs


def _value(records: list[dict], key: str) -> str:
    return next((str(r.get("value")) for r in records if r.get("key") == key), "")


def group(logs: list[pathlib.Path], division: str) -> dict[str, list[pathlib.Path]]:
    """benchmark -> its logs; `UsageError` for an unfinished run, a division that is not the
    system's, or a benchmark without the v0.7 number of runs."""
    from tpubench.report.logs import read_mllog

    by_benchmark: dict[str, list[pathlib.Path]] = defaultdict(list)
    problems = []
    for log in logs:
        records = read_mllog(log)
        benchmark = _value(records, "submission_benchmark")
        if not any(r.get("key") == "run_stop" for r in records):
            problems.append(f"{log} has no run_stop (the run has not ended; finish or rerun it)")
        elif _value(records, "submission_division").lower() != division:
            problems.append(f"{log} is {_value(records, 'submission_division') or 'no'} division,"
                            f" the system file says {division}")
        by_benchmark[benchmark].append(log)
    for benchmark, found in sorted(by_benchmark.items()):
        need = rules.required_runs(benchmark)
        if need is None:
            problems.append(f"{len(found)} log(s) of {benchmark or 'no benchmark'!r}, which is not "
                            "a v0.7 training benchmark")
        elif len(found) != need:
            problems.append(f"{benchmark} has {len(found)} runs; a v0.7 result has exactly {need} "
                            f"(`tpubench run {benchmark} --config=... --runs={need}`)")
    if problems:
        raise UsageError("Nothing was written: " + "; ".join(problems) + ".")
    return dict(by_benchmark)


def _commands(logs: list[pathlib.Path]) -> list[str]:
    """The command lines of the runs behind `logs` (their provenance.json), where recorded."""
    out = []
    for log in logs:
        prov = log.parent / "provenance.json"
        if prov.exists():
            for attempt in json.loads(prov.read_text()).get("attempts", []):
                argv = list(attempt.get("argv") or [])
                if argv and os.path.basename(argv[0]) in ("tpubench", "cli.py"):
                    argv[0] = "tpubench"
                command = " ".join(argv)
                if command and command not in out:
                    out.append(command)
    return out


def write_tree(out: str | os.PathLike, system_file: str | os.PathLike,
               logs: list[pathlib.Path]) -> pathlib.Path:
    """Lay out the submission tree (see the module docstring); its `<submitter>` directory."""
    desc = read_system(system_file)
    system = pathlib.Path(system_file).stem
    by_benchmark = group(logs, str(desc["division"]).lower())
    root = pathlib.Path(out) / str(desc["submitter"])
    taken = [str(root / "results" / system / b) for b in by_benchmark
             if (root / "results" / system / b).exists()]
    if taken:
        raise UsageError(f"Nothing was written: {', '.join(taken)} exist(s); results are never "
                         "overwritten. Pass another OUT, or move those folders away.")
    systems = root / "systems"
    systems.mkdir(parents=True, exist_ok=True)
    target = systems / f"{system}.json"
    if target.exists() and json.loads(target.read_text()) != desc:
        raise UsageError(f"{target} exists with other contents; it is never overwritten.")
    target.write_text(json.dumps(desc, indent=1) + "\n")
    for benchmark, found in by_benchmark.items():
        folder = root / "results" / system / benchmark
        folder.mkdir(parents=True)
        for i, log in enumerate(found):
            shutil.copyfile(log, folder / f"result_{i}.txt")
        impl = root / "benchmarks" / benchmark / "implementations" / IMPLEMENTATION
        impl.mkdir(parents=True, exist_ok=True)
        commands = _commands(found) or ["(not recorded: these logs came without provenance.json)"]
        (impl / f"README_{system}.md").write_text(
            f"# {benchmark} on {desc['system_name']} ({system})\n\nMLPerf Training v0.7, "
            f"{desc['division']} division, with tpubench. The runs behind "
            f"results/{system}/{benchmark}/result_*.txt were made by:\n\n"
            + "\n".join(f"    {c}" for c in commands) + "\n")
    return root


def package_checker(root: pathlib.Path) -> tuple[bool, str]:
    """(passed, its log) of `python -m mlperf_logging.package_checker ROOT training 0.7.0`."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "package_checker.log")
        proc = subprocess.run([sys.executable, "-m", "mlperf_logging.package_checker", str(root),
                               rules.USAGE, rules.RULESET, "--log_output", log],
                              capture_output=True, text=True, cwd=tmp, check=False)
        text = proc.stdout + proc.stderr
        if os.path.exists(log):
            text = pathlib.Path(log).read_text() + text
    return CHECKER_OK in text and proc.returncode == 0, text


def main(argv: list[str]) -> int:
    """`tpubench package` (see the module docstring)."""
    from tpubench import helptext

    parser = helptext.Parser(
        prog="tpubench package",
        description=helptext.paragraph(
            "Lay out finished runs as an MLPerf Training v0.7 submission tree (results, system "
            "description, implementation README) and run the official package checker on it."),
        epilog=helptext.epilog("tpubench package --system-template=my_system.json",
                               "tpubench package submission --system=my_system.json "
                               "results/mini/1xcpu/resnet/mini", with_workloads=False))
    parser.add_argument("out", nargs="?", help="where the tree goes (OUT/<submitter>/...)")
    parser.add_argument("sources", nargs="*", help="run directories, directories of runs, or "
                        "MLPerf log files")
    parser.add_argument("--system", help="the system description JSON (every v0.7 field)")
    parser.add_argument("--system-template", help="write a system description to fill in, with "
                        "what this host can say, and stop")
    args = parser.parse_intermixed_args(argv)
    if args.system_template:
        write_template(args.system_template)
        print(f"wrote {args.system_template}: fill in every empty field, then `tpubench package "
              f"OUT --system={args.system_template} RUN_DIR...`")
        return 0
    if not (args.out and args.sources and args.system):
        raise UsageError("tpubench package needs OUT, --system=SYSTEM.json and at least one run "
                         "directory or log (or --system-template=FILE to start a system file).")
    root = write_tree(args.out, args.system, find_logs(args.sources))
    passed, text = package_checker(root)
    print(f"wrote {root}; the official package checker (training 0.7.0): "
          + ("PASSED" if passed else "FAILED"))
    if not passed:
        print(text[-6000:], file=sys.stderr)
    return 0 if passed else 1
