"""N runs of one config, one score: `tpubench run WORKLOAD --config=C --runs=N`.

An MLPerf Training result is several runs of the same config with different seeds, scored by the
olympic mean (`tpubench.report.scoring`). This runs them one after another in this process, one
run directory each, then scores exactly these runs as `tpubench report` would:

- Run `i` (0-based) uses seed `config.run.seed + i`; with one run the config's seed is kept.
- Directories: with `--workdir=D`, one run uses `D` itself and N runs use `D/run_0 .. D/run_<N-1>`
  (a series), so the same command after an interruption skips the runs that ended (their
  `summary.json` is read, never rewritten), resumes the interrupted one from its checkpoint and
  runs the rest. Without `--workdir`, each run takes the next free `results/.../run_<i>`.
- A run that ends without reaching its target is kept and counted by the rules (one such run
  counts as the slowest; two make an MLPerf result invalid). A preempted run stops the series:
  the same command resumes it.
- The count defaults to the v0.7 rules' count for an MLPerf config (5 or 10,
  `tpubench.mlperf.rules.REQUIRED_RUNS`) and to 1 for a mini or smoke config; a mini series is
  summarised (runs reaching the target, median time to target), never printed as an MLPerf score.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from tpubench.errors import UsageError
from tpubench.mlperf import rules
from tpubench.mlperf.results import SUMMARY_NAME, RunDir, default_workdir

SERIES_NAME = "series.json"


def default_runs(config: Any) -> int:
    """The v0.7 run count for an MLPerf config, 1 otherwise."""
    if config.get("is_mlperf", False):
        return rules.required_runs(config.workload) or 1
    return 1


def check_runs(runs: int) -> None:
    """`UsageError` for a count that is not a positive integer."""
    if runs < 1:
        raise UsageError(f"--runs={runs}: pass a positive number of runs (e.g. --runs=5), or "
                         "leave it out for the MLPerf count of an MLPerf config (1 for a mini).")


def run_dirs(config: Any, runs: int, workdir: str | None, results_root: str,
             platform: str) -> list[pathlib.Path]:
    """The directories of a series of `runs` runs (see the module docstring)."""
    if workdir is not None:
        base = pathlib.Path(workdir)
        return [base] if runs == 1 else [base / f"run_{i}" for i in range(runs)]
    first = default_workdir(results_root, config, platform)  # the first free run_<i>
    dirs, i = [], int(first.name.removeprefix("run_"))
    while len(dirs) < runs:  # the next free indices; computed the same way by every process
        if not (first.parent / f"run_{i}").exists():
            dirs.append(first.parent / f"run_{i}")
        i += 1
    return dirs


def seeded(config: Any, index: int, runs: int) -> Any:
    """A copy of `config` with run `index`'s seed (the config's own for a single run)."""
    c = config.copy_and_resolve_references()
    if runs > 1:
        with c.unlocked():
            c.run.seed = int(config.run.seed) + index
    return c


def check_dirs(config: Any, dirs: list[pathlib.Path]) -> None:
    """Before any run: `UsageError` when a directory holds a run of another config than this
    command's (with that directory's seed), naming every key that differs."""
    from tpubench.loops import lifecycle, provenance  # JAX: not for `tpubench run`'s parsing

    for i, d in enumerate(dirs):
        if d.is_dir():
            provenance.check(lifecycle.build_workload(seeded(config, i, len(dirs))).config, d)


def run_series(config: Any, dirs: list[pathlib.Path], train_fn, on_end=None) -> list[dict]:
    """Run (or keep, when finished) each directory's run with its seed; returns the summaries
    of the runs that ended, stopping after a preempted one. `on_end(summary, config, kept)`
    is called as each run ends or is kept (the CLI prints its end, `tpubench.loops.ending`)."""
    check_dirs(config, dirs)
    summaries = []
    for i, d in enumerate(dirs):
        done = RunDir(d).finished_summary()
        if done is not None:
            print(f"[series] run {i + 1}/{len(dirs)} already ended in {d} (status "
                  f"{done.get('status')}), with this command's config: kept, not rerun")
            summaries.append(done)
            if on_end is not None:
                on_end(done, seeded(config, i, len(dirs)), True)
            continue
        if len(dirs) > 1:
            print(f"[series] run {i + 1}/{len(dirs)}: seed "
                  f"{int(config.run.seed) + i} in {d}")
        summary = train_fn(seeded(config, i, len(dirs)), d)
        summaries.append(summary)
        if on_end is not None:
            on_end(summary, seeded(config, i, len(dirs)), False)
        if summary.get("status") == "preempted":
            print(f"[series] run {i + 1}/{len(dirs)} was preempted: run the same command "
                  "again to resume it and the rest of the series")
            break
    return summaries


def score(config: Any, dirs: list[pathlib.Path]) -> dict:
    """Score the finished runs in `dirs` as `tpubench report` does; written as series.json by
    `write_score` and printed by the CLI."""
    from tpubench.report.compliance import check_runs
    from tpubench.report.logs import run_from_workdir
    from tpubench.report.scoring import BenchmarkResult, mini_summary, score_runs

    runs = [run_from_workdir(d / SUMMARY_NAME) for d in dirs if (d / SUMMARY_NAME).exists()]
    base = {"workload": config.workload, "config": config.config_name, "runs_requested": len(dirs),
            "runs_ended": len(runs), "run_dirs": [str(d) for d in dirs]}
    if not config.get("is_mlperf", False):
        return base | {"kind": "not an MLPerf result (mini/smoke/modified config)",
                       **mini_summary(runs)}
    scored = [r for r in runs if not r.not_scored]
    # A converged run whose log the official checker refuses counts as not converged (as the
    # result summarizer scores it); ~10 ms a log, in process.
    check_runs(scored)
    result = score_runs(BenchmarkResult(runs[0].system if runs else "unknown", config.workload,
                                        scored))
    return base | {
        "kind": "MLPerf Training v0.7 olympic mean (each log checked by the official "
                "compliance checker, as `tpubench report` does)",
        "required_runs": result.required,
        "olympic_mean_minutes": result.minutes,
        "minutes_averaged": list(result.score.used) if result.score else [],
        "verdict": result.verdict(),
        "valid": result.valid,
        "not_scored": {r.path: r.not_scored for r in runs if r.not_scored},
    }


def write_score(dirs: list[pathlib.Path], scored: dict, workdir: str | None) -> None:
    """With an explicit --workdir holding a series, keep the series' score beside its runs
    (a new file name if one exists: nothing is overwritten)."""
    if workdir is None or len(dirs) == 1:
        return
    base = pathlib.Path(workdir)
    path, n = base / SERIES_NAME, 1
    while path.exists():
        path, n = base / f"series.{n}.json", n + 1
    path.write_text(json.dumps(scored, indent=2, default=float) + "\n")


def summary_line(scored: dict) -> str:
    """One line a person reads after the series."""
    if "olympic_mean_minutes" in scored:
        mean = scored["olympic_mean_minutes"]
        shown = "none" if mean is None else f"{mean:.3f} min"
        return (f"[series] {scored['workload']} {scored['config']}: {scored['runs_ended']} of "
                f"{scored['required_runs']} required runs ended; olympic mean {shown}; "
                f"{scored['verdict']}")
    med = scored.get("median_time_to_target_s")
    shown = "none reached it" if med is None else f"median time to target {med:.1f} s"
    return (f"[series] {scored['workload']} {scored['config']} (not an MLPerf result): "
            f"{scored['reached_target']} of {scored['runs']} runs reached the target "
            f"({scored['target']}); {shown}")

