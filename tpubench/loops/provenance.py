"""What ran in a workdir: `<workdir>/provenance.json`, and the check that a rerun is the same run.

    {"config": {...},          the resolved config the run trains (after the workload's own
                               adjustments), as ml_collections writes it to JSON
     "attempts": [             one record per attempt: the first, then each resume or restart
        {"argv", "code" (git commit and dirty flag, or the package version), "versions"
         (python, jax, jaxlib, flax, optax, orbax-checkpoint, libtpu, mlperf-logging, ...),
         "devices" (kind and count), "process_count", "hostname", "time_utc", "resumed"}]}

Process 0 writes it when an attempt opens the run directory, after every check that can refuse
the run and before init (temp file, then rename: a kill never leaves half a file). A rerun into
the workdir compares its config with the stored one before any compute (`check`): the same
config resumes the run (or, finished, reports the kept result); any other config is a
`UsageError` naming each key that differs, with both values. The keys of `FREE_ON_RESUME` may
differ: they say where things are or how the harness works, never what is trained or timed. A
workdir written before provenance existed is resumed with a one-line note.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import pathlib
import socket
import subprocess
import sys
from typing import Any

import jax
import ml_collections

from tpubench.errors import UsageError
from tpubench.mlperf.results import LOG_NAME, SUMMARY_NAME

NAME = "provenance.json"

# Config keys that may differ between the attempts of one run, and why: none changes what is
# trained or what the clock measures. (run.profile_steps is not here: a trace runs on the clock.)
FREE_ON_RESUME = {
    "data.dir": "where the data sets are found (TPUBENCH_DATA_DIR), not what they hold",
    "run.compile_cache": "whether compiled executables are cached (untimed init only)",
    "run.compile_cache_dir": "where compiled executables are cached (untimed init only)",
    "run.clear_page_cache": "a fresh run's page-cache flush (a resume never flushes)",
    "run.checkpoint_every_evals": "how often checkpoints are saved, not what is trained",
    "run.checkpoint_keep": "how many checkpoints are kept",
    "run.cpu_max_steps_in_flight": "host back-pressure on simulated CPU devices",
}

# Distributions whose versions each attempt records (absent ones are left out).
PACKAGES = ("tpubench", "jax", "jaxlib", "libtpu", "libtpu-nightly", "flax", "optax",
            "orbax-checkpoint", "ml-collections", "mlperf-logging", "numpy")

_noted: set[str] = set()  # workdirs whose missing provenance was already noted (one line each)


def resolved(config: ml_collections.ConfigDict) -> dict[str, Any]:
    """`config` as JSON data (ml_collections' own JSON writer; what provenance.json stores)."""
    return json.loads(config.to_json_best_effort(sort_keys=True))


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for k, v in tree.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def differences(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """One 'KEY: A in the workdir, B on this command line' per differing key (sorted), the keys
    of `FREE_ON_RESUME` left out."""
    old, new = _flat(stored), _flat(current)
    missing = "(absent)"
    return [f"{k}: {json.dumps(old.get(k, missing))} in the workdir, "
            f"{json.dumps(new.get(k, missing))} on this command line"
            for k in sorted(old.keys() | new.keys())
            if k not in FREE_ON_RESUME and old.get(k, missing) != new.get(k, missing)]


def read(workdir: str | os.PathLike) -> dict[str, Any] | None:
    """The workdir's provenance.json, or None when it has none."""
    path = pathlib.Path(workdir) / NAME
    return json.loads(path.read_text()) if path.is_file() else None


def _holds_a_run(path: pathlib.Path) -> bool:
    return any((path / n).exists() for n in (LOG_NAME, SUMMARY_NAME, "checkpoints"))


def check(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> None:
    """`UsageError` when `workdir` holds a run of another config (every differing key named);
    a one-line note on stderr when it holds a run from before provenance.json existed."""
    path = pathlib.Path(workdir)
    stored = read(path)
    if stored is None:
        if _holds_a_run(path) and str(path) not in _noted and jax.process_index() == 0:
            _noted.add(str(path))
            print(f"tpubench: note: {path} holds a run from an older tpubench, without {NAME}: "
                  "its config cannot be compared with this one; going on as before.",
                  file=sys.stderr)
        return
    diffs = differences(stored["config"], resolved(config))
    if diffs:
        raise UsageError(
            f"{path} holds a run of another config, so this command can neither resume it nor "
            f"report it: {'; '.join(diffs)}. Pass a new --workdir for this config (or rerun "
            f"the command that made {path}, whose config is in {path / NAME}).")


def _code_version() -> dict[str, Any]:
    """The git commit (and whether the checkout has changes) when tpubench runs from a git
    checkout, else the installed package version."""
    root = pathlib.Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True, timeout=20).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], check=True,
                               capture_output=True, text=True, timeout=20).stdout.strip()
        return {"git_commit": commit, "git_dirty": bool(dirty), "path": str(root)}
    except (OSError, subprocess.SubprocessError):  # not a checkout, or no git
        return {"package_version": _version("tpubench")}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str]:
    """Python's version and each installed distribution of `PACKAGES` with its version."""
    found = {"python": sys.version.split()[0]}
    found.update({d: v for d in PACKAGES if (v := _version(d)) is not None})
    return found


def attempt_record(resumed: bool) -> dict[str, Any]:
    """This attempt's command line, code, package versions, devices and host."""
    devices = jax.devices()
    return {
        "argv": list(sys.argv),
        "code": _code_version(),
        "versions": versions(),
        "devices": {"platform": devices[0].platform, "kind": devices[0].device_kind,
                    "count": len(devices)},
        "process_count": jax.process_count(),
        "hostname": socket.gethostname(),
        "time_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "resumed": bool(resumed),
    }


def write(config: ml_collections.ConfigDict, workdir: str | os.PathLike, resumed: bool) -> None:
    """Add this attempt to `workdir`'s provenance.json (made with `config` on the first
    attempt; `check` has compared any earlier one). Temp file, then rename."""
    path = pathlib.Path(workdir) / NAME
    data = read(workdir) or {"config": resolved(config), "attempts": []}
    data["attempts"].append(attempt_record(resumed))
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


__all__ = ["FREE_ON_RESUME", "NAME", "attempt_record", "check", "differences", "read",
           "resolved", "write"]
