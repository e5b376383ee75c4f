"""Compile once: init time of a first and a second run of the same config, with a fresh cache.

Each repeat makes a fresh, empty compilation cache directory, then runs `tpubench run` twice in
fresh subprocesses with that cache (`--config.run.compile_cache_dir`): the first run compiles and
writes every executable, the second loads them. It prints both runs' `init_s` from summary.json
(init_start to init_stop: mesh, state init, AOT compile; the untimed part the cache shortens)
side by side, the whole process's wall time, how many entries the cache holds after each run,
and the medians over the repeats. With `--off`, each repeat also runs once with
`--config.run.compile_cache=false`, the init of a run without any cache (what the first run's cache
writes cost shows as first minus off). Each run stops at the first eval after `--budget_s`
seconds of the timed region (`--config.run.max_time_s`; 0 = train to the target): the init is what
is measured, and the budget leaves it untouched.

    JAX_PLATFORMS=cpu python benchmarks/compile_cache.py [--repeats=3] [--workload=resnet] \\
        [--config=mini] [--budget_s=1] [--off] [--config.KEY=VALUE ...]

Issue 10.7's goal: the ResNet mini's second-run init at most 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent


def entries(cache: pathlib.Path) -> int:
    """Executables in a JAX cache directory (one `*-cache` file each)."""
    return sum(1 for _ in cache.glob("*-cache")) if cache.is_dir() else 0


def run_once(workload: str, config: str, overrides: list[str], workdir: pathlib.Path,
             cache_args: list[str]) -> dict:
    """One `tpubench run` in a fresh process; its summary.json plus the process's wall time."""
    cmd = [sys.executable, "-m", "tpubench.cli", "run", workload, f"--config={config}",
           f"--workdir={workdir}", *cache_args, *overrides]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode not in (0, 1):  # 1: the run ended aborted (still a measured init)
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    summary = json.loads((workdir / "summary.json").read_text())
    return {"init_s": summary["init_s"], "wall_s": wall, "status": summary["status"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workload", default="resnet")
    p.add_argument("--config", default="mini")
    p.add_argument("--off", action="store_true", help="also time a run without any cache")
    p.add_argument("--budget_s", type=float, default=1.0,
                   help="stop each run at the first eval after this many timed seconds (0: none)")
    args, overrides = p.parse_known_args()
    bad = [o for o in overrides if not o.startswith("--config.")]
    if bad:
        p.error(f"unrecognized arguments: {' '.join(bad)}")
    if args.budget_s:
        overrides = [f"--config.run.max_time_s={args.budget_s}", *overrides]
    rows = []
    root = pathlib.Path(tempfile.mkdtemp(prefix="tpubench-compile-cache-"))
    try:
        for i in range(args.repeats):
            cache = root / f"cache_{i}"
            on = [f"--config.run.compile_cache_dir={cache}"]
            row = {}
            if args.off:
                row["off"] = run_once(args.workload, args.config, overrides,
                                      root / f"off_{i}", ["--config.run.compile_cache=false"])
            row["first"] = run_once(args.workload, args.config, overrides, root / f"a_{i}", on)
            row["first"]["entries"] = entries(cache)
            row["second"] = run_once(args.workload, args.config, overrides, root / f"b_{i}", on)
            row["second"]["entries"] = entries(cache)
            rows.append(row)
            line = (f"repeat {i}: init_s first {row['first']['init_s']:6.2f}  second "
                    f"{row['second']['init_s']:6.2f}  | process wall_s first "
                    f"{row['first']['wall_s']:6.2f}  second {row['second']['wall_s']:6.2f}  | "
                    f"cache entries {row['first']['entries']} -> {row['second']['entries']}")
            if args.off:
                line += f"  | no cache: init_s {row['off']['init_s']:6.2f}"
            print(line, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def med(run: str, key: str) -> float:
        return statistics.median(r[run][key] for r in rows)

    first, second = med("first", "init_s"), med("second", "init_s")
    print(f"median init_s over {len(rows)}: first {first:.2f}  second {second:.2f}  "
          f"second/first {second / first:.3f}"
          + (f"  no cache {med('off', 'init_s'):.2f}" if args.off else ""))
    print(f"median process wall_s: first {med('first', 'wall_s'):.2f}  "
          f"second {med('second', 'wall_s'):.2f}")


if __name__ == "__main__":
    main()
