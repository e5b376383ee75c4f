"""MLPerf logging through the official `mlperf_logging.mllog`, and the official compliance checker.

Each run gets its own `MLLogger` bound to its own file (the package's global logger would mix
runs that share a process, e.g. tests or a notebook). Only process 0 writes.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys
import tempfile
from typing import Any

from mlperf_logging.mllog import constants, mllog

from tpubench.mlperf import rules

# tpubench's own log keys: a preempted attempt's last line, and each resume's first (written by
# `tpubench.loops.lifecycle`, read back by `tpubench.report.logs`).
PREEMPTED_KEY = "tpubench_preempted"
RESUME_KEY = "tpubench_resume"

__all__ = ["RunLogger", "ComplianceResult", "check_compliance", "constants"]


class RunLogger:
    """An `mllog.MLLogger` writing `:::MLLOG` lines to one file (append), process 0 only."""

    def __init__(self, path: str | os.PathLike | None, enabled: bool = True, echo: bool = False):
        self.path = os.fspath(path) if path else None
        self.enabled = enabled and path is not None
        self._logger = logging.getLogger(f"tpubench.mlperf.mllog.{id(self)}")
        self._logger.propagate = False
        self._logger.setLevel(logging.INFO)
        self._handlers: list[logging.Handler] = []
        if self.enabled:
            self._handlers.append(logging.FileHandler(self.path, mode="a"))
            if echo:
                self._handlers.append(logging.StreamHandler(sys.stdout))
            for h in self._handlers:
                self._logger.addHandler(h)
        self._mllogger = mllog.MLLogger(logger=self._logger, default_stack_offset=2)

    def event(self, key: str, value: Any = None, metadata: dict | None = None,
              time_ms: int | None = None) -> None:
        """A point-in-time event (hyperparameters, eval_accuracy, ...)."""
        if self.enabled:
            self._mllogger.event(key=key, value=value, metadata=metadata, time_ms=time_ms)

    def start(self, key: str, value: Any = None, metadata: dict | None = None,
              time_ms: int | None = None) -> None:
        """Start of an interval (init_start, run_start, block_start, eval_start)."""
        if self.enabled:
            self._mllogger.start(key=key, value=value, metadata=metadata, time_ms=time_ms)

    def end(self, key: str, value: Any = None, metadata: dict | None = None,
              time_ms: int | None = None) -> None:
        """End of an interval (init_stop, run_stop, block_stop, eval_stop)."""
        if self.enabled:
            self._mllogger.end(key=key, value=value, metadata=metadata, time_ms=time_ms)

    def close(self) -> None:
        """Flush and detach the file handler."""
        for h in self._handlers:
            h.flush()
            h.close()
            self._logger.removeHandler(h)
        self._handlers = []


@dataclasses.dataclass(frozen=True)
class ComplianceResult:
    """The official checker's verdict on one log and what it printed."""

    valid: bool
    output: str

    def failed_checks(self) -> list[str]:
        """The checker's ERROR/WARNING lines (what failed), without its banner lines."""
        return [
            line
            for line in self.output.splitlines()
            if ("ERROR" in line or "Failed" in line or "FAILED" in line)
            and "Logging output also at" not in line
        ]


def check_compliance(
    log_path: str | os.PathLike, usage: str = rules.USAGE, ruleset: str = rules.RULESET
) -> ComplianceResult:
    """Run `python -m mlperf_logging.compliance_checker` (the official tool) on one log."""
    with tempfile.TemporaryDirectory() as tmp:  # never write beside the log (it may be read-only)
        return _run_checker(log_path, usage, ruleset, os.path.join(tmp, "compliance.txt"))


def _run_checker(log_path, usage: str, ruleset: str, out_log: str) -> ComplianceResult:
    proc = subprocess.run(
        [
            sys.executable, "-m", "mlperf_logging.compliance_checker",
            "--usage", usage, "--ruleset", ruleset, "--log_output", out_log, os.fspath(log_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return ComplianceResult(proc.returncode == 0, proc.stdout + proc.stderr)
