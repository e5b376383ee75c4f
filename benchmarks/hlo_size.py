"""How big a workload's train step (and eval step) is before XLA compiles it: the step lowered
on ShapeDtypeStructs (jax.jit(...).lower, tracing only: no compile, no device, seconds of one
CPU), its StableHLO line count and the count of the ops that dominate compile time (while
loops, sorts, gathers, scatters, convolutions). Used to find why `tpubench fit maskrcnn
--config=full` did not finish compiling (workloads/maskrcnn/configs/full.py's docstring).

    JAX_PLATFORMS=cpu python benchmarks/hlo_size.py maskrcnn full [KEY=VALUE ...]
    JAX_PLATFORMS=cpu python benchmarks/hlo_size.py ssd full

Prints one line per step: lines, ops by kind, the lowering's wall time.
"""

from __future__ import annotations

import ast
import collections
import re
import sys
import time

import jax

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import steps

_KINDS = ("while", "sort", "gather", "scatter", "convolution", "dot_general", "reduce",
          "dynamic_slice", "dynamic_update_slice", "call", "func.func")


def op_counts(text: str) -> dict[str, int]:
    """Counts of `stablehlo.<kind>` (and func.func / call) occurrences in a lowered module."""
    counts = collections.Counter()
    for m in re.finditer(r"\b(?:stablehlo\.)?(" + "|".join(_KINDS) + r")\b[ (\"]", text):
        counts[m.group(1)] += 1
    return dict(counts)


def lowered_texts(workload_name: str, config_name: str, overrides: dict) -> dict[str, str]:
    cfg = config_lib.load(workload_name, config_name, overrides)
    w = registry.create(cfg)
    state = steps.abstract_state(w)
    gbs, ebs = int(cfg.data.global_batch_size), int(cfg.eval.batch_size)
    out = {}
    t = time.perf_counter()
    train = jax.jit(steps.make_train_step(w)).lower(state, w.batch_spec(gbs, train=True))
    out["train"] = (train.as_text(), time.perf_counter() - t)
    t = time.perf_counter()
    ev = jax.jit(steps.make_eval_step(w)).lower(state, w.batch_spec(ebs, train=False))
    out["eval"] = (ev.as_text(), time.perf_counter() - t)
    return out


def main(workload_name: str, config_name: str, overrides: dict) -> None:
    for name, (text, secs) in lowered_texts(workload_name, config_name, overrides).items():
        print(f"{workload_name}/{config_name} {name}: {len(text.splitlines())} lines, "
              f"{op_counts(text)}, lowered in {secs:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2],
         {k: ast.literal_eval(v) for k, v in (a.split("=", 1) for a in sys.argv[3:])})
