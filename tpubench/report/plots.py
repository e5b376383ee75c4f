"""PNG plots (matplotlib, Agg backend, no display needed).

- quality against time for every run of a benchmark, one panel per system, with the target line;
- time to target per system (one panel per benchmark, log scale), optionally per chip;
- performance profiles (AlgoPerf-style), drawn from `profiles.PerformanceProfiles`;
- per workload, quality, training loss and examples/s against time for every run workdir
  (`curves`: from each run's metrics.jsonl).
"""

from __future__ import annotations

import math
import os
import pathlib
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tpubench.report.curves import TrainPoint  # noqa: E402
from tpubench.report.logs import Run  # noqa: E402
from tpubench.report.scoring import BenchmarkResult  # noqa: E402

DPI = 90


def _grid(n: int, ncols: int = 3) -> tuple[int, int]:
    ncols = max(1, min(ncols, n))
    return math.ceil(n / ncols), ncols


def _save(fig: plt.Figure, path: str | os.PathLike) -> pathlib.Path:
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def _draw_runs(ax: plt.Axes, runs: Sequence[Run], title: str) -> None:
    for i, run in enumerate(runs):
        if not run.curve:
            continue
        xs = [p.elapsed_min for p in run.curve]
        ys = [p.quality for p in run.curve]
        style = {"color": "0.6", "linestyle": "--"} if not run.converged else {}
        label = run.path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".txt")
        ax.plot(xs, ys, marker=".", markersize=3, linewidth=1, label=label if i < 10 else None,
                **style)
    target = next((r.target for r in runs if r.target is not None), None)
    if target is not None:
        ax.axhline(target.primary_threshold, color="red", linewidth=1, linestyle=":",
                   label=f"target {target.primary_threshold:g}")
        ax.set_ylabel(target.primary_key if target.primary_key != "quality" else target.metric)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("minutes since run_start")
    ax.grid(alpha=0.3)


def plot_quality_curves(
    results: Sequence[BenchmarkResult], path: str | os.PathLike, title: str = ""
) -> pathlib.Path:
    """Quality vs minutes for every run of one benchmark: a panel per system, target dashed red.

    Runs that did not converge are grey and dashed.
    """
    rows, cols = _grid(len(results))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, res in zip(axes.flat, results, strict=False):
        chips = f", {res.chips} chips" if res.chips else ""
        score = f": {res.minutes:.3g} min" if res.minutes is not None else ": no valid score"
        _draw_runs(ax, res.runs, f"{res.system}{chips}{score}")
    for ax in list(axes.flat)[len(results):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return _save(fig, path)


def plot_mini_curves(runs: Sequence[Run], path: str | os.PathLike) -> pathlib.Path:
    """Quality vs time of mini/smoke runs, a panel per workload (labelled: not MLPerf)."""
    workloads = sorted({r.benchmark for r in runs})
    rows, cols = _grid(len(workloads))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, name in zip(axes.flat, workloads, strict=False):
        group = [r for r in runs if r.benchmark == name]
        _draw_runs(ax, group, f"{name} (mini, not an MLPerf result)")
        ax.legend(fontsize=6, loc="lower right")
    for ax in list(axes.flat)[len(workloads):]:
        ax.axis("off")
    fig.tight_layout()
    return _save(fig, path)


def plot_time_to_target(
    groups: dict[str, list[BenchmarkResult]], path: str | os.PathLike, per_chip: bool = False
) -> pathlib.Path:
    """Horizontal bars of each system's score per benchmark (log scale), coloured by source.

    With `per_chip`, bars are chip-minutes (score x chips) and systems without a chip count
    are left out.
    """
    rows, cols = _grid(len(groups), ncols=2)
    sources = sorted({r.source for rs in groups.values() for r in rs})
    colors = {s: plt.get_cmap("tab10")(i % 10) for i, s in enumerate(sources)}
    height = max(2.2, 0.32 * max((len(rs) for rs in groups.values()), default=1) + 1.0)
    fig, axes = plt.subplots(rows, cols, figsize=(6.0 * cols, height * rows), squeeze=False)
    for ax, (benchmark, results) in zip(axes.flat, groups.items(), strict=False):
        value = (lambda r: r.chip_minutes) if per_chip else (lambda r: r.minutes)
        shown = [r for r in results if value(r) is not None]
        labels = [f"{r.system}" + (f" ({r.chips})" if r.chips else "") for r in shown]
        vals = [value(r) for r in shown]
        ax.barh(range(len(shown)), vals, color=[colors[r.source] for r in shown])
        ax.set_yticks(range(len(shown)), labels, fontsize=7)
        ax.invert_yaxis()
        if vals:
            ax.set_xscale("log")
            ax.set_xlim(min(vals) / 2, max(vals) * 3)  # room for the value labels
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:.3g}", va="center", fontsize=7)
        ax.set_title(benchmark, fontsize=10)
        ax.set_xlabel("chip-minutes (score x chips)" if per_chip else "minutes to target")
        ax.grid(axis="x", alpha=0.3, which="both")
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    if len(sources) > 1:
        handles = [plt.Rectangle((0, 0), 1, 1, color=colors[s]) for s in sources]
        fig.legend(handles, sources, loc="upper right", fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def plot_profiles(
    taus: Sequence[float], profiles: dict[str, Sequence[float]], path: str | os.PathLike,
    title: str = "",
) -> pathlib.Path:
    """Performance profiles: for each system, fraction of benchmarks within tau of the best."""
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    for name, rho in sorted(profiles.items()):
        ax.step(taus, rho, where="post", label=name, linewidth=1.3)
    ax.set_xscale("log")
    ax.set_xlabel("tau (time / best time on the benchmark)")
    ax.set_ylabel("fraction of benchmarks within tau")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def plot_train_curves(
    runs: Sequence[Run], curves: dict[str, list[TrainPoint]], names: Sequence[str],
    path: str | os.PathLike, title: str = "",
) -> pathlib.Path:
    """Three panels side by side, minutes since run_start on every x axis: quality (target
    dotted red), training loss and examples/s, one line per run (`names[i]` labels `runs[i]`;
    `curves[name]` are its metrics.jsonl points). Runs that did not converge are dashed."""
    fig, (q_ax, loss_ax, rate_ax) = plt.subplots(1, 3, figsize=(13.0, 3.4))
    for i, (run, name) in enumerate(zip(runs, names, strict=True)):
        # One colour per run in all three panels; a run that did not converge is dashed.
        style = {"color": plt.get_cmap("tab10")(i % 10), "marker": ".", "markersize": 3,
                 "linewidth": 1, "label": name if i < 10 else None,
                 **({"linestyle": "--"} if not run.converged else {})}
        series = [[(p.elapsed_min, p.quality) for p in run.curve]]
        points = curves.get(name, [])
        series += [[(p.minutes, getattr(p, field)) for p in points
                    if getattr(p, field) is not None] for field in ("loss", "examples_per_s")]
        for ax, xy in zip((q_ax, loss_ax, rate_ax), series, strict=True):
            if xy:
                ax.plot(*zip(*xy, strict=True), **style)
    targets = {r.target.primary_threshold: r.target for r in runs if r.target is not None}
    for threshold in sorted(targets):  # a mini's own target and MLPerf's may differ
        q_ax.axhline(threshold, color="red", linewidth=1, linestyle=":",
                     label=f"target {threshold:g}")
    target = next(iter(targets.values()), None)
    for ax, label in ((q_ax, target.metric if target else "quality"),
                      (loss_ax, "training loss"), (rate_ax, "training examples/s")):
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("minutes since run_start")
        ax.grid(alpha=0.3)
    if q_ax.lines:
        q_ax.legend(fontsize=6, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return _save(fig, path)
