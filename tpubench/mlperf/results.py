"""A run's directory and its summary. Nothing here ever overwrites a result.

    <workdir>/mlperf_log.txt             the MLPerf log of the run; a resumed run appends to it
                                         (one run_start, one run_stop; docs/timing.md)
    <workdir>/mlperf_log.failed_attempt<N>.txt
                                         logs of attempts that ended without a checkpoint to
                                         resume from (kept, never lost, never scored)
    <workdir>/summary.json               written once, when the run ends
    <workdir>/provenance.json            the resolved config, and each attempt's command, code,
                                         versions, devices and host (`tpubench.loops.provenance`)
    <workdir>/sharding.json, sharding.txt
                                         where every state leaf lives, written at init
                                         (`tpubench.platform.sharding_report`)
    <workdir>/checkpoints/               orbax (resume, inference)

Runs without an explicit --workdir go to `results/<mlperf|mini>/<platform>/<workload>/<config>/
run_<i>` under the current directory: mini and smoke runs are kept apart from MLPerf-config runs.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

from tpubench.errors import UsageError

LOG_NAME = "mlperf_log.txt"
SUMMARY_NAME = "summary.json"


class RunDir:
    """One run's directory."""

    def __init__(self, workdir: str | os.PathLike):
        self.path = pathlib.Path(workdir)
        self.log_path = self.path / LOG_NAME
        self.summary_path = self.path / SUMMARY_NAME

    def finished_summary(self) -> dict[str, Any] | None:
        """The summary of a run that already ended here, if any."""
        if not self.summary_path.exists():
            return None
        return json.loads(self.summary_path.read_text())

    def check_not_finished(self) -> None:
        """`UsageError` if a finished run lives here (results are never overwritten)."""
        done = self.finished_summary()
        if done is not None:
            raise UsageError(
                f"{self.path} already holds a finished run ({done.get('workload')} "
                f"{done.get('config')}, status {done.get('status')}). Results are never "
                "overwritten: pass a new --workdir."
            )

    def prepare(self, resumed: bool) -> None:
        """Create the directory. A resumed run appends to its log; a fresh run in a directory
        that holds the log of an attempt that left no checkpoint sets that log aside (renamed,
        never deleted, never scored)."""
        self.path.mkdir(parents=True, exist_ok=True)
        if self.log_path.exists() and not resumed:
            n = 0
            while (self.path / f"mlperf_log.failed_attempt{n}.txt").exists():
                n += 1
            self.log_path.rename(self.path / f"mlperf_log.failed_attempt{n}.txt")

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Write summary.json once (atomic rename; refuses to replace an existing one)."""
        if self.summary_path.exists():
            raise UsageError(f"{self.summary_path} exists; refusing to overwrite a result.")
        tmp = self.summary_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True, default=float) + "\n")
        os.replace(tmp, self.summary_path)


def default_workdir(root: str | os.PathLike, config: Any, platform: str) -> pathlib.Path:
    """The next unused `run_<i>` directory for this workload/config/platform."""
    division = "mlperf" if config.get("is_mlperf", False) else "mini"
    base = pathlib.Path(root) / division / platform.replace(" ", "_") / config.workload / (
        config.config_name or "custom")
    i = 0
    while (base / f"run_{i}").exists():
        i += 1
    return base / f"run_{i}"
