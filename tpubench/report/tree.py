"""Finding runs on disk: MLPerf submission trees and directories of our own run workdirs.

An MLPerf tree is laid out as submissions are: `<org>/results/<system>/<benchmark>/result_<i>.txt`
with `<org>/systems/<system>.json` describing the system (chip count = `number_of_nodes` x
`accelerators_per_node`). Those are exactly the folders `mlperf_logging`'s result summarizer
scores (`results/<system>/<benchmark>/result_*.txt`), and they are scored the same way here.
Anything else that looks like a result (logs directly in a system folder, logs not named
`result_<i>.txt`, attempt logs of a preempted tpubench run, an unfinished run) is listed as not
scored, with the reason; nothing in a tree makes `tpubench report` fail.

Our workdirs hold `summary.json` (+ `mlperf_log.txt`); their system is `summary["platform"]`. One
directory may hold either or both, at any depth.

Divisions: a published result is open division when its system description says so (the key
is spelled `division` or `divison`, in any case) or any of its logs does; open-division results
are scored but reported apart and never compared with closed ones.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
from collections import defaultdict

from tpubench.errors import UsageError
from tpubench.mlperf import rules
from tpubench.report.logs import (
    Run,
    chips_from_platform,
    run_from_log,
    run_from_workdir,
    unfinished_reason,
)
from tpubench.report.scoring import BenchmarkResult, score_runs

RESULT_LOG = re.compile(r"result_\d+\.txt")
ATTEMPT_LOG = re.compile(r"mlperf_log\.(failed_)?attempt(\d+)\.txt")
SUMMARIZER_LAYOUT = "<org>/results/<system>/<benchmark>/result_<i>.txt"


@dataclasses.dataclass(frozen=True)
class SystemInfo:
    """What a system description says that a report shows."""

    name: str
    chips: int | None = None
    framework: str = ""
    submitter: str = ""
    division: str = ""
    problem: str = ""  # why the description could not be read ('' when it could)


@dataclasses.dataclass(frozen=True)
class NotScored:
    """Something that looks like a result but is not scored, and why."""

    path: str
    reason: str


@dataclasses.dataclass
class ResultsTree:
    """Everything found under one directory.

    `results`: closed-division MLPerf results; `open_results`: open-division ones (reported
    apart); `mini_runs`: our runs that are not MLPerf; `not_scored`: what was found but cannot
    be scored, with the reason.
    """

    root: str
    label: str
    results: list[BenchmarkResult]
    mini_runs: list[Run]
    open_results: list[BenchmarkResult] = dataclasses.field(default_factory=list)
    not_scored: list[NotScored] = dataclasses.field(default_factory=list)

    def all_runs(self) -> list[Run]:
        """Every run, MLPerf (closed and open) and mini."""
        return [r for res in [*self.results, *self.open_results] for r in res.runs] + list(
            self.mini_runs)


def read_system(path: str | os.PathLike, name: str) -> SystemInfo:
    """A `systems/<system>.json` description; a missing or unreadable file gives just the name."""
    try:
        desc = json.loads(pathlib.Path(path).read_text())
    except OSError:
        return SystemInfo(name, problem=f"no system description {pathlib.Path(path).name}")
    except json.JSONDecodeError as e:
        return SystemInfo(name, problem=f"system description is not valid JSON ({e.msg})")
    if not isinstance(desc, dict):
        return SystemInfo(name, problem="system description is not a JSON object")
    try:
        chips = int(desc["number_of_nodes"]) * max(int(desc["accelerators_per_node"]), 1)
    except (KeyError, TypeError, ValueError):
        chips = None
    division = desc.get("division", desc.get("divison", ""))
    return SystemInfo(
        name=name, chips=chips, framework=str(desc.get("framework", "")),
        submitter=str(desc.get("submitter", "")), division=str(division or "").strip().lower(),
    )


def _is_in_submission(path: pathlib.Path) -> bool:
    """The file lies under `<org>/results/` of an org folder that also has `systems/`."""
    parts = path.resolve().parts
    return any(
        part == "results" and pathlib.Path(*parts[:i], "systems").is_dir()
        for i, part in enumerate(parts[:-1])
    )


def _notes(folder: pathlib.Path, log: pathlib.Path) -> str:
    """Further reasons a misplaced folder could not be scored: its system description, its
    log format."""
    notes = []
    system_dir = next((f for f in (folder, folder.parent) if f.parent.name == "results"), None)
    if system_dir is not None:
        desc = system_dir.parent.parent / "systems" / f"{system_dir.name}.json"
        problem = read_system(desc, system_dir.name).problem
        if problem:
            notes.append(problem)
    problem = run_from_log(log, "?").format_problem
    if problem:
        notes.append(problem)
    return "".join(f"; {n}" for n in notes)


def _scan_logs(root: pathlib.Path):
    """(summarizer-layout logs grouped per (org, system, benchmark folder), NotScored list)."""
    groups: dict[tuple[pathlib.Path, str, str], list[pathlib.Path]] = defaultdict(list)
    misplaced: dict[pathlib.Path, list[pathlib.Path]] = defaultdict(list)
    for log in sorted(root.rglob("result_*.txt")):
        if not RESULT_LOG.fullmatch(log.name) or not log.is_file():
            continue  # e.g. result_0.txt.compliance.txt written by the checker CLI
        parts = log.resolve().parts
        if len(parts) >= 4 and parts[-4] == "results":
            groups[(log.parents[3], log.parent.parent.name, log.parent.name)].append(log)
        else:
            misplaced[log.parent].append(log)
    not_scored = []
    for folder, logs in sorted(misplaced.items()):
        not_scored.append(NotScored(os.fspath(folder), (
            f"{len(logs)} result logs directly in {folder.name}/, not in a benchmark folder: "
            f"scored results are laid out as {SUMMARIZER_LAYOUT} (mlperf_logging's result "
            "summarizer does not score these either)" + _notes(folder, logs[0]))))
    other: dict[pathlib.Path, list[pathlib.Path]] = defaultdict(list)
    for log in sorted(root.rglob("*.log")):
        if log.is_file() and _is_in_submission(log):
            other[log.parent].append(log)
    for folder, logs in sorted(other.items()):
        not_scored.append(NotScored(os.fspath(folder), (
            f"{len(logs)} logs named *.log (e.g. {logs[0].name}), not result_<i>.txt: "
            "mlperf_logging's result summarizer reads only result_*.txt"
            + _notes(folder, logs[0]))))
    return groups, not_scored


def _attempt_logs(root: pathlib.Path) -> list[NotScored]:
    out = []
    for log in sorted(root.rglob("mlperf_log.*attempt*.txt")):
        m = ATTEMPT_LOG.fullmatch(log.name)
        if m:
            kind = "failed attempt" if m.group(1) else "attempt"
            out.append(NotScored(os.fspath(log), (
                f"log of {kind} {m.group(2)} of the run in {log.parent.name}/, which never "
                "finished: an attempt is never scored on its own (a run's score is its "
                "mlperf_log.txt, every attempt included)")))
    return out


def _orphan_logs(root: pathlib.Path) -> list[NotScored]:
    """Run logs (`mlperf_log.txt`) with no `summary.json` beside them: never scored."""
    out = []
    for log in sorted(root.rglob("mlperf_log.txt")):
        if (log.parent / "summary.json").exists() or not log.is_file():
            continue
        run = run_from_log(log, "?")
        reason = unfinished_reason(run) if run.status == "unfinished" else (
            "mlperf_log.txt with no summary.json beside it: the run never finished writing "
            "its results")
        out.append(NotScored(os.fspath(log.parent), reason))
    return out


def _benchmark_name(runs: list[Run], folder: str) -> str:
    alias = "maskrcnn" if folder == "mask" else folder  # the summarizer's _benchmark_alias
    logged = runs[0].benchmark if runs else "unknown"
    return logged if logged in rules.TARGETS else alias


def load_tree(root: str | os.PathLike, label: str | None = None) -> ResultsTree:
    """Find and score every run under `root`. Raises `UsageError` when nothing is there."""
    root_path = pathlib.Path(root)
    if not root_path.is_dir():
        raise UsageError(
            f"Results directory {os.fspath(root)!r} does not exist. Pass a directory holding an "
            "MLPerf tree (results/<system>/<benchmark>/result_<i>.txt) or tpubench run workdirs "
            "(each with summary.json)."
        )
    closed: list[BenchmarkResult] = []
    opened: list[BenchmarkResult] = []
    groups, not_scored = _scan_logs(root_path)
    for (org_dir, system, folder), logs in sorted(groups.items()):
        info = read_system(org_dir / "systems" / f"{system}.json", system)
        source = label or info.submitter or org_dir.name
        runs = [run_from_log(p, system, folder) for p in logs]
        division = "open" if info.division == "open" or any(
            r.division == "open" for r in runs) else "closed"
        res = BenchmarkResult(system, _benchmark_name(runs, folder), runs, info.chips,
                              info.framework, source, division=division)
        (opened if division == "open" else closed).append(res)

    mini: list[Run] = []
    ours: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for summary in sorted(root_path.rglob("summary.json")):
        try:
            run = run_from_workdir(summary)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, OSError):
            continue  # not one of our run summaries
        if run.not_scored:
            not_scored.append(NotScored(run.path, run.not_scored))
        elif run.is_mlperf:
            ours[(run.system, run.benchmark)].append(run)
        else:
            mini.append(run)
    for (system, benchmark), runs in sorted(ours.items()):
        closed.append(
            BenchmarkResult(system, benchmark, runs, chips_from_platform(system),
                            "JAX (tpubench)", label or root_path.resolve().name)
        )
    not_scored += _orphan_logs(root_path) + _attempt_logs(root_path)

    if not closed and not opened and not mini and not not_scored:
        raise UsageError(
            f"No results found under {os.fspath(root)!r}: expected result_<i>.txt logs in "
            "results/<system>/<benchmark>/ folders, or run workdirs with summary.json. Point "
            "`tpubench report` at a submission folder (e.g. .../Google) or a runs directory."
        )
    for res in [*closed, *opened]:
        score_runs(res)
    return ResultsTree(os.fspath(root), label or root_path.resolve().name, closed, mini, opened,
                       not_scored)


def rescore(tree: ResultsTree) -> None:
    """Score every result again (after compliance verdicts have been attached to its runs)."""
    for res in [*tree.results, *tree.open_results]:
        score_runs(res)
