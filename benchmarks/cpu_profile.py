"""Where the time of an XLA:CPU ResNet-50 train step goes (issue 17.5).

Compiles the harness's train step for `resnet --config=full` in float32 (synthetic data made on
device, K=1, as `resnet_throughput.py`), runs `--steps` steps under `jax.profiler.trace` with
XLA:CPU's per-thunk trace events on (`--xla_cpu_enable_xprof_traceme`), and sums the events by
the compiled HLO instruction that produced them, grouped by what the instruction computes (read
from the optimized HLO, which is written to `--out` with the trace):

- convolutions: forward, backward to the input (`transpose(jvp(..))` in the op name) and backward
  to the filter (a window larger than the kernel it produces), each by kernel and output shape,
  and the 1x1 convolutions that `model.conv_impl` computes as matmuls (`dot`);
- max-pool forward (`reduce-window`) and backward (`select-and-scatter`);
- batch norm (op names under a `BatchNorm`/`bn_init`/`norm_proj` scope), forward and backward;
- the optimizer and loss (ops outside the model's forward and backward), synthetic data, copies.

    JAX_PLATFORMS=cpu python benchmarks/cpu_profile.py --batch=32 --steps=2 --out=/tmp/r50prof

Figures: benchmarks/README.md ("The CPU gap"). Only the shares are meaningful on a loaded machine.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_cpu_enable_xprof_traceme=true").strip()

import jax  # noqa: E402  (XLA_FLAGS must be set first)

INSTR = re.compile(r"^\s*(?:ROOT )?%(\S+) = (\S+) (\S+?)\(")
COMP = re.compile(r"^(?:ENTRY )?%(\S+) .*\{$")
CALLS = re.compile(r"calls=%([\w.\-]+)")
OP_NAME = re.compile(r'op_name="([^"]*)"')
WINDOW = re.compile(r"window=\{size=(\S+?)[ ,}]")
NORM_SCOPE = re.compile(r"/(BatchNorm_\d+|bn_init|norm_proj)/")


def parse_hlo(text: str) -> tuple[dict, dict]:
    """(computations: name -> [lines], entry instructions: name -> line) of optimized HLO."""
    comps, entry, current, is_entry = {}, {}, None, False
    for line in text.splitlines():
        m = COMP.match(line)
        if m:
            current, is_entry = m.group(1), line.startswith("ENTRY")
            comps[current] = []
            continue
        if current is None:
            continue
        comps[current].append(line)
        im = INSTR.match(line)
        if is_entry and im:
            entry[im.group(1)] = line
    return comps, entry


def classify(line: str, comps: dict) -> str:
    """What one entry instruction computes, as a category label."""
    inner = []
    for callee in CALLS.findall(line):
        inner += comps.get(callee, [])
    body = [line] + inner
    names = " ".join(OP_NAME.findall(" ".join(body)))
    own = OP_NAME.search(line)
    backward = "transpose(jvp(" in (own.group(1) if own else names)
    for ln in body:
        im = INSTR.match(ln)
        if not im:
            continue
        shape, kind = im.group(2), im.group(3)
        if kind == "convolution":
            window = (WINDOW.search(ln) or [None, "?"])[1]
            out = shape.split("{")[0]
            dims = [int(d) for d in re.findall(r"\d+", out.split("[")[1])]
            size = [int(d) for d in re.findall(r"\d+", window)]
            if len(dims) == 4 and size and dims[1] < size[0]:  # window = dy's map: dW [i,h,w,o]
                return f"conv backward-filter -> {out}"
            return f"conv {'backward-input' if backward else 'forward'} {window} -> {out}"
        if kind == "dot" and "/Dense_" in names:
            return "classifier (dense layer)"
        if kind == "dot" and "jvp(ResNet)" in names:  # a 1x1 convolution as a matmul
            out = shape.split("{")[0]
            if "lhs_contracting_dims={0}" in ln:  # x^T @ dy, summed over pixels: the kernel's
                return f"conv backward-filter 1x1 as matmul -> {out}"
            return f"conv {'backward-input' if backward else 'forward'} 1x1 as matmul -> {out}"
        if kind == "select-and-scatter":
            return "max-pool backward"
        if kind == "reduce-window":
            return "max-pool forward"
    if NORM_SCOPE.search(names):
        return f"batch norm {'backward' if backward else 'forward'}"
    if "random" in names or "threefry" in names:
        return "synthetic data"
    if "jvp(ResNet)" in names:
        return f"other model ops {'backward' if backward else 'forward'}"
    if "copy" in line.split("=")[0] or " copy(" in line:
        return "copies"
    return "optimizer, loss and the rest"


def group(category: str) -> str:
    """The coarse group of a category (its first two words for convolutions)."""
    return " ".join(category.split()[:2]) if category.startswith("conv") else category


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--top", type=int, default=15, help="rows of the per-shape table")
    p.add_argument("--out", default="/tmp/tpubench_cpu_profile")
    args = p.parse_args()

    from tpubench import config as config_lib
    from tpubench import mesh as mesh_lib
    from tpubench import registry
    from tpubench.loops import engine

    cfg = config_lib.load("resnet", "full", {
        "data.source": "synthetic", "run.steps_per_dispatch": 1, "model.dtype": "float32",
        "data.global_batch_size": args.batch, "eval.batch_size": args.batch,
        "data.image_size": args.image})
    eng = engine.JitEngine(registry.create(cfg), mesh_lib.build_mesh(cfg))
    compiled = eng.compile(1, synthetic=True)
    state = eng.init_state(cfg.run.seed)
    state, m = compiled.train(state)  # warm-up
    jax.block_until_ready(m)
    os.makedirs(args.out, exist_ok=True)
    text = compiled.train.as_text()
    with open(os.path.join(args.out, "train_step.hlo.txt"), "w") as f:
        f.write(text)
    jax.profiler.start_trace(args.out, create_perfetto_trace=True)
    for _ in range(args.steps):
        state, m = compiled.train(state)
        jax.block_until_ready(m)
    jax.profiler.stop_trace()
    trace = max(glob.glob(os.path.join(args.out, "**", "*.trace.json.gz"), recursive=True),
                key=os.path.getmtime)
    with gzip.open(trace) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data

    comps, entry = parse_hlo(text)
    by_cat: collections.Counter = collections.Counter()
    wall = collections.Counter()
    for e in events:
        if e.get("ph") != "X":
            continue
        if e["name"] in entry:
            by_cat[classify(entry[e["name"]], comps)] += e.get("dur", 0) / 1e3
        elif "block_until_ready" in e["name"]:
            wall["step"] += e.get("dur", 0) / 1e3
    total = sum(by_cat.values())
    groups: collections.Counter = collections.Counter()
    for cat, ms in by_cat.items():
        groups[group(cat)] += ms
    step_ms = wall["step"] / args.steps
    print(f"ResNet-50 v1.5 float32 train step, batch {args.batch}, {args.image}x{args.image}, "
          f"{jax.devices()[0].device_kind}: {args.steps} traced steps, {step_ms:.0f} ms a step "
          f"(host wall), {total / args.steps:.0f} ms of thunks a step (trace: {trace})")
    print("\n| where | ms a step | share of thunk time |\n|---|---|---|")
    for cat, ms in groups.most_common():
        print(f"| {cat} | {ms / args.steps:.0f} | {100 * ms / total:.1f}% |")
    print(f"\n| top {args.top} by shape | ms a step | share |\n|---|---|---|")
    for cat, ms in by_cat.most_common(args.top):
        print(f"| {cat} | {ms / args.steps:.0f} | {100 * ms / total:.1f}% |")


if __name__ == "__main__":
    main()
