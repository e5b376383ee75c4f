"""What the baseline scripts share: a printed row per baseline, and its fit time.

A mini's target must sit above what a trivial model reaches on the same data, or reaching it
says nothing about the workload: each `baselines/<workload>.py` reads the mini's data through
the workload's own data code and prints every baseline it fits, then the strongest.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def row(mini: str, name: str, value: float, seconds: float) -> None:
    """Print one baseline's figure and how long it took to fit."""
    print(f"{mini:7s} {name:68s} {value:.4f}   ({seconds:.0f} s to fit)", flush=True)


def timed(fit_score: Callable[[], float]) -> tuple[float, float]:
    """Run `fit_score`; its value and its wall seconds."""
    start = time.perf_counter()
    value = fit_score()
    return value, time.perf_counter() - start


def main(mini: str, baselines: Callable[..., dict[str, float]], metric: str, doc: str,
         **int_flags: int) -> None:
    """The command line of a baseline script: `--only=SUBSTRING` and `--NAME=INT` for each of
    `int_flags` (name: default), passed to `baselines` by keyword; then the strongest figure."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--only", default="", help="run only baselines whose name contains this")
    for name, default in int_flags.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    args = parser.parse_args()
    best = max(baselines(args.only, **{k: getattr(args, k) for k in int_flags}).values())
    print(f"{mini:7s} strongest baseline: {best:.4f} {metric}\n", flush=True)
