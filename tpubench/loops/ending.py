"""The end of a run on the terminal, the same for `tpubench run` and the absl mains.

    tpubench: resnet/mini ended: success (reached the target)
      quality     top1_accuracy 0.9712, target >= 0.967 (higher is better)
      time        time to target 101.3 s on the clock (init 9.8 s, untimed)
      work        750 steps, 96000 samples, 1412.3 examples/s while training; MFU 3.1%
      MLPerf      NOT an MLPerf result (mini: ...)
      MLPerf log  <workdir>/mlperf_log.txt
      summary     <workdir>/summary.json
      metrics     <workdir>/metrics.jsonl; TensorBoard: <workdir>/tensorboard

on stdout, and for every run that did not succeed (aborted, preempted, refused by the compliance
checker) one paragraph on stderr saying why and what to do. The machine-readable result is
summary.json; nothing here is parsed.
"""

from __future__ import annotations

import math
import pathlib
import sys
from typing import Any

import jax

from tpubench.mlperf.results import RunDir


def _num(x: Any, fmt: str = ".4f") -> str:
    if isinstance(x, dict):
        return ", ".join(f"{k} {_num(v, fmt)}" for k, v in x.items())
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "none (no eval ran)"
    return format(x, fmt)


def _name(summary: dict[str, Any], config: Any) -> str:
    return (f"{summary.get('workload') or config.workload}/"
            f"{summary.get('config') or config.config_name}")


def _quality(summary: dict[str, Any], config: Any) -> str:
    higher = bool(config.eval.get("higher_is_better", True))
    return (f"{summary['target_metric']} {_num(summary['final_quality'])}, target "
            f"{'>=' if higher else '<='} {summary['target']} "
            f"({'higher' if higher else 'lower'} is better)"
            + ("; the target is provisional" if summary.get("target_provisional") else ""))


def _mlperf(summary: dict[str, Any]) -> str:
    if summary.get("is_mlperf"):
        return (f"an MLPerf Training v0.7 {summary.get('division')} division run (one of the "
                "runs a result needs: `tpubench report` scores them)")
    reasons = summary.get("open_reasons") or []
    if reasons:
        return "NOT an MLPerf closed-division result: open division (" + "; ".join(reasons) + ")"
    return ("NOT an MLPerf result (mini: a small config with its own data and target, for "
            "trying the harness)")


def _compliance_failed(summary: dict[str, Any]) -> bool:
    comp = summary.get("compliance")
    valid = comp.get("valid") if isinstance(comp, dict) else comp
    return valid is False


def why(summary: dict[str, Any], config: Any) -> str | None:
    """The paragraph saying why a run did not succeed and what to do; None for a success."""
    status, name = summary.get("status"), _name(summary, config)
    if status == "preempted":
        where = (f"generation {summary['generation']}" if "generation" in summary
                 else f"step {summary.get('step')}")
        return (f"tpubench: {name} was preempted at {where} (attempt {summary.get('attempts')}): "
                f"its checkpoint is saved in {summary.get('workdir')}. Rerun the same command "
                "to resume it; the clock keeps running meanwhile (MLPerf never pauses it).")
    if status == "success":
        if _compliance_failed(summary):
            return (f"tpubench: {name} reached its target, but the MLPerf compliance checker "
                    f"refused its log, so it is not scored: `tpubench check "
                    f"{summary.get('mlperf_log')}` shows each failing rule.")
        return None
    quality = (f"{summary.get('target_metric')} {_num(summary.get('final_quality'))} against "
               f"the target {summary.get('target')}")
    if summary.get("error"):
        reason = summary["error"]
    elif config.run.get("max_time_s") and (summary.get("run_time_s") or 0) > config.run.max_time_s:
        reason = (f"the time limit (run.max_time_s = {config.run.max_time_s} s) ran out at "
                  f"{summary['run_time_s']:.1f} s before the target ({quality}). Raise "
                  "--config.run.max_time_s, or set it to 0 for none.")
    elif "generations" in summary:
        reason = (f"the generation budget (run.max_generations = {summary['generations']}) ran "
                  f"out before the target ({quality}). Raise --config.run.max_generations.")
    else:
        reason = (f"the sample budget ({summary.get('steps')} steps, "
                  f"{summary.get('samples', 'its')} samples) ran out before the target "
                  f"({quality}). Raise --config.run.max_train_samples, or try another seed "
                  "(--config.run.seed).")
    return f"tpubench: {name} was aborted: {reason}"


def block(summary: dict[str, Any], config: Any, kept: bool = False) -> str:
    """The lines a person reads at the end of a run (or of a kept one, `kept`)."""
    status, name = summary.get("status"), _name(summary, config)
    if status == "preempted":
        run = RunDir(summary["workdir"])
        return "\n".join([
            f"tpubench: {name} stopped: preempted (rerun the same command to resume it)",
            f"  MLPerf log  {run.log_path}",
            f"  checkpoint  {run.path / 'checkpoints'}"])
    said = {"success": "success (reached the target)",
            "aborted": "aborted (did not reach the target; why: on stderr)"}.get(status, status)
    head = (f"tpubench: {name}: kept, not rerun (this workdir already holds this config's "
            f"result): {said}" if kept else f"tpubench: {name} ended: {said}")
    if summary.get("time_to_target_s") is not None:
        timed = f"time to target {summary['time_to_target_s']:.1f} s on the clock"
    else:
        timed = (f"run time {_num(summary.get('run_time_s'), '.1f')} s on the clock (the "
                 "target was not reached)")
    if summary.get("init_s") is not None:
        timed += f"; init {summary['init_s']:.1f} s, untimed"
    work = f"{summary.get('steps')} steps"
    if "generations" in summary:
        work += f", {summary['generations']} generations, {summary.get('games')} games"
    if "samples" in summary:
        work += f", {summary['samples']} samples"
    rate = summary.get("train_examples_per_s")
    if rate:
        work += f", {rate:.1f} examples/s while training"
    mfu = summary.get("mfu")
    work += f"; MFU {mfu:.1%}" if mfu else "; MFU n/a (no peak FLOP/s for this device)"
    lines = [head, f"  quality     {_quality(summary, config)}", f"  time        {timed}",
             f"  work        {work}", f"  MLPerf      {_mlperf(summary)}"]
    run = RunDir(pathlib.Path(summary["mlperf_log"]).parent)
    lines += [f"  MLPerf log  {run.log_path}", f"  summary     {run.summary_path}"]
    metrics = summary.get("metrics")
    if metrics:
        lines.append(f"  metrics     {metrics['jsonl']}; TensorBoard: {metrics['tensorboard']}")
    return "\n".join(lines)


def report(summary: dict[str, Any], config: Any, kept: bool = False) -> None:
    """Print the end of a run (process 0): the block on stdout and, unless it succeeded, why
    on stderr."""
    if jax.process_index() != 0:
        return
    print(block(summary, config, kept), flush=True)
    reason = why(summary, config)
    if reason is not None:
        print(reason, file=sys.stderr, flush=True)


__all__ = ["block", "report", "why"]
