"""The official compliance checker's verdict on each log, in process, cached by file content.

`tpubench.mlperf.mllog.check_compliance` runs `python -m mlperf_logging.compliance_checker` in a
subprocess: right for one log, slow for a results tree (~1 s of interpreter start per log, ~260
logs in Google's v0.7 tree). The checker's own Python API (`mlp_compliance.make_checker` +
`mlp_compliance.main`, which the official result summarizer itself calls in process) does the
same checks in ~10 ms a log. Two caveats handled here: it reports through the root `logging`
logger (silenced while it runs) and it keeps a module-global queue of config files (so calls are
serialised with a lock, never run in threads). Should that API change, we fall back to the
subprocess. Verdicts are cached by SHA-256 of the log, so a re-run of `tpubench report` on the
same tree checks nothing again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import pathlib
import threading
from collections.abc import Iterable, Iterator

from tpubench.mlperf import rules
from tpubench.mlperf.mllog import ComplianceResult, check_compliance

USAGE = rules.USAGE
RULESET = rules.RULESET
_LOCK = threading.Lock()


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    previous = root.disabled
    root.disabled = True
    try:
        yield
    finally:
        root.disabled = previous


def check_in_process(log_path: str | os.PathLike, ruleset: str = RULESET) -> ComplianceResult:
    """The official checker's verdict on one log via its Python API (same result as the CLI)."""
    from mlperf_logging.compliance_checker import mlp_compliance

    config_file = f"{USAGE}_{ruleset}/common.yaml"
    with _LOCK, _quiet_root_logger():
        checker = mlp_compliance.make_checker(USAGE, ruleset, False, False)
        valid, *_ = mlp_compliance.main(os.fspath(log_path), config_file, checker)
    messages = [
        *(f"ERROR: {m}" for m in checker.overwritable.values()),
        *(f"ERROR: {m}" for m in checker.not_overwritable),
        *(f"WARNING: {m}" for m in checker.warnings.values()),
    ]
    return ComplianceResult(bool(valid), "\n".join(messages))


def _check_one(log_path: str, ruleset: str) -> ComplianceResult:
    try:
        return check_in_process(log_path, ruleset)
    except (ImportError, AttributeError, TypeError):
        return check_compliance(log_path, usage=USAGE, ruleset=ruleset)
    except Exception as e:  # noqa: BLE001 - the checker's own parser crashing is a verdict
        # e.g. KeyError('time_ms') on a log stamped in time_s: the official checker cannot read
        # it (its CLI dies with the same traceback), so the log fails compliance.
        return ComplianceResult(
            False, f"ERROR: the official checker could not parse this log: {type(e).__name__} "
            f"{e}")


class ComplianceCache:
    """Verdicts keyed by (ruleset, SHA-256 of the log), kept in a JSON file when given a path."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = pathlib.Path(path) if path else None
        self._entries: dict[str, dict] = {}
        if self.path and self.path.exists():
            try:
                self._entries = json.loads(self.path.read_text())
            except (json.JSONDecodeError, OSError):
                self._entries = {}

    @staticmethod
    def key(log_path: str | os.PathLike, ruleset: str) -> str:
        """The cache key of a log: ruleset + content hash (paths may move, content may not)."""
        digest = hashlib.sha256(pathlib.Path(log_path).read_bytes()).hexdigest()
        return f"{ruleset}:{digest}"

    def check(self, log_path: str | os.PathLike, ruleset: str = RULESET) -> ComplianceResult:
        """The cached verdict, or the checker's (then cached)."""
        key = self.key(log_path, ruleset)
        hit = self._entries.get(key)
        if hit is not None:
            return ComplianceResult(bool(hit["valid"]), hit["output"])
        result = _check_one(os.fspath(log_path), ruleset)
        self._entries[key] = {"valid": result.valid, "output": result.output}
        return result

    def save(self) -> None:
        """Write the cache file (no-op without a path)."""
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self._entries))


def check_runs(runs: Iterable, cache: ComplianceCache | None = None) -> None:
    """Set `run.compliance` on every run that has an MLPerf log (in place)."""
    cache = cache or ComplianceCache()
    for run in runs:
        if run.log_path:
            run.compliance = cache.check(run.log_path)
    cache.save()
