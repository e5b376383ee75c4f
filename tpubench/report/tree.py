"""Finding runs on disk: MLPerf submission trees and directories of our own run workdirs.

An MLPerf tree is laid out as submissions are: `<org>/results/<system>/<benchmark>/result_<i>.txt`
with `<org>/systems/<system>.json` describing the system (chip count = `number_of_nodes` x
`accelerators_per_node`). Our workdirs hold `summary.json` (+ `mlperf_log.txt`); their system is
`summary["platform"]`. One directory may hold either or both, at any depth.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
from collections import defaultdict

from tpubench.errors import UsageError
from tpubench.report.logs import Run, chips_from_platform, run_from_log, run_from_workdir
from tpubench.report.scoring import BenchmarkResult, score_runs

RESULT_LOG = re.compile(r"result_\d+\.txt")


@dataclasses.dataclass(frozen=True)
class SystemInfo:
    """What a system description says that a report shows."""

    name: str
    chips: int | None = None
    framework: str = ""
    accelerator: str = ""
    submitter: str = ""


@dataclasses.dataclass
class ResultsTree:
    """Everything found under one directory: MLPerf results, and mini runs reported apart."""

    root: str
    label: str
    results: list[BenchmarkResult]
    mini_runs: list[Run]

    def all_runs(self) -> list[Run]:
        """Every run, MLPerf and mini."""
        return [r for res in self.results for r in res.runs] + list(self.mini_runs)


def read_system(path: str | os.PathLike, name: str) -> SystemInfo:
    """A `systems/<system>.json` description; a missing or unreadable file gives just the name."""
    try:
        desc = json.loads(pathlib.Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return SystemInfo(name)
    try:
        chips = int(desc["number_of_nodes"]) * max(int(desc["accelerators_per_node"]), 1)
    except (KeyError, TypeError, ValueError):
        chips = None
    return SystemInfo(
        name=name, chips=chips, framework=str(desc.get("framework", "")),
        accelerator=str(desc.get("accelerator_model_name", "")),
        submitter=str(desc.get("submitter", "")),
    )


def _result_logs(root: pathlib.Path) -> dict[tuple[pathlib.Path, str, str], list[pathlib.Path]]:
    groups: dict[tuple[pathlib.Path, str, str], list[pathlib.Path]] = defaultdict(list)
    for log in sorted(root.rglob("result_*.txt")):
        if not RESULT_LOG.fullmatch(log.name):
            continue  # e.g. result_0.txt.compliance.txt written by the checker CLI
        bench_dir = log.parent
        system_dir = bench_dir.parent
        org_dir = system_dir.parent.parent
        groups[(org_dir, system_dir.name, bench_dir.name)].append(log)
    return groups


def load_tree(root: str | os.PathLike, label: str | None = None) -> ResultsTree:
    """Find and score every run under `root`. Raises `UsageError` when there is none."""
    root_path = pathlib.Path(root)
    if not root_path.is_dir():
        raise UsageError(
            f"Results directory {os.fspath(root)!r} does not exist. Pass a directory holding an "
            "MLPerf tree (results/<system>/<benchmark>/result_<i>.txt) or tpubench run workdirs "
            "(each with summary.json)."
        )
    results: list[BenchmarkResult] = []
    for (org_dir, system, benchmark), logs in sorted(_result_logs(root_path).items()):
        info = read_system(org_dir / "systems" / f"{system}.json", system)
        source = label or info.submitter or org_dir.name
        runs = [run_from_log(p, system, benchmark) for p in logs]
        bench = runs[0].benchmark if runs else benchmark
        results.append(
            BenchmarkResult(system, bench, runs, info.chips, info.framework, source)
        )

    mini: list[Run] = []
    ours: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for summary in sorted(root_path.rglob("summary.json")):
        try:
            run = run_from_workdir(summary)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue  # not one of our run summaries
        if run.is_mlperf:
            ours[(run.system, run.benchmark)].append(run)
        else:
            mini.append(run)
    for (system, benchmark), runs in sorted(ours.items()):
        results.append(
            BenchmarkResult(system, benchmark, runs, chips_from_platform(system),
                            "JAX (tpubench)", label or root_path.resolve().name)
        )

    if not results and not mini:
        raise UsageError(
            f"No results found under {os.fspath(root)!r}: expected result_<i>.txt logs in "
            "results/<system>/<benchmark>/ folders, or run workdirs with summary.json. Point "
            "`tpubench report` at a submission folder (e.g. .../Google) or a runs directory."
        )
    for res in results:
        score_runs(res)
    return ResultsTree(os.fspath(root), label or root_path.resolve().name, results, mini)


def rescore(tree: ResultsTree) -> None:
    """Score every result again (after compliance verdicts have been attached to its runs)."""
    for res in tree.results:
        score_runs(res)
