"""Train any workload to its target: the one place that picks the loop, above both loops (neither
imports the other).

    Workload.loop == "supervised"    `tpubench.loops.supervised` (a fixed data set)
    Workload.loop == "generations"   `tpubench.loops.selfplay` (self-play reinforcement learning,
                                     MiniGo)

The CLI (`tpubench run`), the absl entry points and the notebooks call
`train_and_evaluate(config, workdir)` here; both loops share the run sequence and summary of
`tpubench.loops.lifecycle`.
"""

from __future__ import annotations

import ml_collections

from tpubench.loops import lifecycle, selfplay, supervised


def train_and_evaluate(config: ml_collections.ConfigDict, workdir) -> dict:
    """Run `config`'s workload to its target (or budget) in `workdir` by its loop; returns the
    summary (or, after SIGTERM, the preempted result: rerun to resume)."""
    workload = lifecycle.create_workload(config)
    if workload.loop == "generations":
        return selfplay.train_and_evaluate(workload, workdir)
    return supervised.train_workload(workload, workdir)


__all__ = ["train_and_evaluate"]
