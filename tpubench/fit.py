"""`tpubench fit WORKLOAD --config=CONFIG --topology=NAME [--config.KEY=VALUE ...] [--json]`.

Will this config fit that slice, and how fast could a step be at best? Answered before renting
the hardware: the mesh is built over the target's devices (compile-only TPU devices from libtpu,
`tpubench.platform.topology`), and the harness's own `JitEngine` AOT-compiles the real train block
(K steps per dispatch, the input block included) and eval step for them, exactly as `tpubench run`
would. From the compiled executables:

- memory per device (XLA's `memory_analysis()`): arguments, outputs, temporaries, code, and the
  total (arguments + outputs - donated aliases + temporaries + code) against the chip's HBM;
- FLOPs and HBM bytes of one step per device: `cost_analysis()` of ONE train step compiled alone
  with the same shardings. Not the block's: XLA counts a rolled loop body once but every copy
  of an unrolled one, so the block's figures are `scan_unroll` steps' (or K's) and a K=1 block
  has no loop at all; one step compiled alone is the same for every K and unroll;
- a roofline lower bound of the step time, max(FLOPs / peak FLOP/s, bytes / HBM bandwidth), with
  the peak of the matmul unit that runs the config's dtype, per JAX device
  (`tpubench.platform.chips`).

Exit status 0 when it fits, 1 when it does not (the reason is printed: over HBM, or XLA itself
ran out of memory while compiling), 2 for bad input.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Any

from tpubench.errors import UsageError
from tpubench.platform.heartbeat import heartbeat

_GiB = 2**30
_OOM_MARKERS = ("RESOURCE_EXHAUSTED", "Ran out of memory", "out of memory")


@dataclasses.dataclass(frozen=True)
class Memory:
    """Bytes per device of one compiled executable."""

    arguments: int
    outputs: int
    aliased: int  # outputs that reuse a donated argument's buffer (the train state)
    temps: int
    code: int

    @property
    def total(self) -> int:
        """What the executable needs resident at its peak."""
        return self.arguments + self.outputs - self.aliased + self.temps + self.code


@dataclasses.dataclass(frozen=True)
class FitReport:
    """Everything `fit` found out; `fits` is None when the target's memory is unknown (CPU)."""

    workload: str
    config: str
    topology: str
    devices: int
    mesh: dict[str, int]
    global_batch_size: int
    steps_per_dispatch: int
    compile_s: float
    train: Memory | None
    eval: Memory | None
    hbm_bytes: float | None
    flops_per_step: float  # per device, one step compiled alone (module doc)
    bytes_per_step: float  # per device
    # The whole step before partitioning (the figure `run`'s MFU uses), from the lowered
    # module's cost analysis; None where the target's backend gives none (libtpu's compile-only
    # TPU devices report no cost for a lowered module: it read 0.0 there before).
    run_flops_per_step: float | None
    peak_flops: float  # per device
    hbm_bytes_per_s: float | None
    fits: bool | None
    reason: str

    @property
    def roofline_step_s(self) -> float:
        """Lower bound of one step's time on one device (0 when nothing is known)."""
        compute = self.flops_per_step / self.peak_flops if self.peak_flops else 0.0
        memory = self.bytes_per_step / self.hbm_bytes_per_s if self.hbm_bytes_per_s else 0.0
        return max(compute, memory)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready figures (memory in bytes, times in seconds)."""
        out = dataclasses.asdict(self)
        for name in ("train", "eval"):
            mem = getattr(self, name)
            if mem is not None:
                out[name]["total"] = mem.total
        out["roofline_step_s"] = self.roofline_step_s
        return out


def memory_of(compiled: Any) -> Memory:
    """Per-device memory of a compiled executable, from XLA's `memory_analysis()`."""
    m = compiled.memory_analysis()
    return Memory(int(m.argument_size_in_bytes), int(m.output_size_in_bytes),
                  int(m.alias_size_in_bytes), int(m.temp_size_in_bytes),
                  int(m.generated_code_size_in_bytes))


def _cost(compiled: Any) -> tuple[float, float]:
    cost = compiled.cost_analysis()
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else {}
    cost = cost or {}
    return float(cost.get("flops", 0.0)), float(cost.get("bytes accessed", 0.0))


def _peaks(topo: Any, dtype: str) -> tuple[float, float | None, float | None]:
    """(peak FLOP/s, HBM bytes, HBM bytes/s) of one JAX device of `topo`."""
    from tpubench.platform import perf

    chip = topo.chip_spec
    if chip is None:  # CPU: measured peak shared by the process's devices; no HBM
        return perf.cpu_peak_flops() / topo.device_count, None, None
    return (chip.per_device_flops(dtype, perf.matmul_precision()), chip.per_device_hbm_bytes,
            chip.per_device_hbm_bytes_per_s)


def one_step_cost(engine: Any) -> tuple[float, float]:
    """(FLOPs, HBM bytes) per device of ONE train step, compiled alone with the engine's state
    and batch shardings: independent of steps_per_dispatch and scan_unroll (module doc)."""
    import jax

    from tpubench import mesh as mesh_lib
    from tpubench.loops import steps

    gbs = engine.config.data.global_batch_size
    state_in = mesh_lib.with_shardings(engine.abstract_state, engine.state_shardings)
    batch_in = {k: jax.ShapeDtypeStruct(tuple(s.shape), s.dtype, sharding=engine.batch_sharding)
                for k, s in engine.workload.batch_spec(gbs, train=True).items()}
    with engine.context():
        step = jax.jit(steps.make_train_step(engine.workload),
                       out_shardings=(engine.state_shardings, engine.replicated),
                       donate_argnums=0).lower(state_in, batch_in).compile()
    return _cost(step)


def _is_oom(error: Exception) -> bool:
    text = str(error)
    return any(marker in text for marker in _OOM_MARKERS)


def fit(config: Any, topology_name: str) -> FitReport:
    """Compile `config` for `topology_name` and measure it (see module doc)."""
    from tpubench import mesh as mesh_lib
    from tpubench import registry
    from tpubench.loops import engine as engine_lib
    from tpubench.platform import topology

    topo = topology.parse(topology_name)
    workload = registry.create(config)
    if config.run.parallelism == "pmap":
        raise UsageError("fit compiles the jit engine; pmap cannot target compile-only devices. "
                         "Drop --config.run.parallelism=pmap.")
    mesh = mesh_lib.build_mesh(config, devices=topo.devices())
    mesh_lib.check_batch(config.data.global_batch_size, mesh)
    mesh_lib.check_batch(config.eval.batch_size, mesh, "eval.batch_size")
    peak, hbm, bandwidth = _peaks(topo, config.model.dtype)
    base = dict(workload=workload.name, config=config.config_name, topology=topo.name,
                devices=topo.device_count, mesh=dict(mesh.shape),
                global_batch_size=int(config.data.global_batch_size),
                steps_per_dispatch=int(config.run.steps_per_dispatch), hbm_bytes=hbm,
                peak_flops=peak, hbm_bytes_per_s=bandwidth)

    t = time.perf_counter()
    try:
        engine = engine_lib.JitEngine(workload, mesh)
        compiled = engine.compile(config.run.steps_per_dispatch,
                                  synthetic=config.data.source == "synthetic")
        compile_s = time.perf_counter() - t
        flops, nbytes = one_step_cost(engine)
    except Exception as e:  # noqa: BLE001 - XLA reports OOM as a runtime error
        if not _is_oom(e):
            raise
        first = next((line for line in str(e).splitlines() if line.strip()), str(e))
        return FitReport(**base, compile_s=time.perf_counter() - t, train=None, eval=None,
                         flops_per_step=0.0, bytes_per_step=0.0, run_flops_per_step=None,
                         fits=False,
                         reason=f"XLA ran out of memory compiling for {topo.name}: {first}")
    train, evaluate = memory_of(compiled.train), memory_of(compiled.eval)
    need = max(train.total, evaluate.total)
    if hbm is None:
        fits, reason = None, f"{topo.name} has no HBM figure: memory not checked"
    elif need > hbm:
        fits, reason = False, (f"needs {need / _GiB:.2f} GiB per device, {topo.chip_spec.name} "
                               f"has {hbm / _GiB:.0f} GiB of HBM")
    else:
        fits, reason = True, (f"{need / _GiB:.2f} GiB of {hbm / _GiB:.0f} GiB HBM per device "
                              f"({100 * need / hbm:.0f}%)")
    return FitReport(**base, compile_s=compile_s, train=train, eval=evaluate,
                     flops_per_step=flops, bytes_per_step=nbytes,
                     run_flops_per_step=compiled.flops_per_step or None, fits=fits,
                     reason=reason)


def _gib(n: float) -> str:
    return f"{n / _GiB:8.3f} GiB"


def format_report(r: FitReport) -> str:
    """The human-readable report `tpubench fit` prints."""
    per_device = r.global_batch_size // max(1, r.mesh["data"] * r.mesh["fsdp"])
    lines = [
        f"{r.workload} --config={r.config} on {r.topology}: {r.devices} devices, mesh "
        + " x ".join(f"{k}={v}" for k, v in r.mesh.items())
        + f"; global batch {r.global_batch_size} ({per_device} per batch shard), "
        f"{r.steps_per_dispatch} steps per dispatch",
        f"  AOT compile (train block + eval step): {r.compile_s:.1f} s",
    ]
    for name, mem in (("train block", r.train), ("eval step", r.eval)):
        if mem is not None:
            lines.append(f"  {name:<11} per device: arguments {_gib(mem.arguments)}, outputs "
                         f"{_gib(mem.outputs)} (aliased {_gib(mem.aliased)}), temps "
                         f"{_gib(mem.temps)}, code {_gib(mem.code)} -> total {_gib(mem.total)}")
    if r.train is not None:
        lines.append(f"  per step per device: {r.flops_per_step / 1e12:.3f} TFLOP, "
                     f"{r.bytes_per_step / 1e9:.3f} GB accessed")
        bound = r.roofline_step_s
        if bound:
            bw = f", {r.hbm_bytes_per_s / 1e9:.0f} GB/s" if r.hbm_bytes_per_s else ""
            lines.append(
                f"  roofline step time >= {bound * 1e3:.3f} ms (peak {r.peak_flops / 1e12:.0f} "
                f"TFLOP/s{bw}) -> at most {r.global_batch_size / bound:,.0f} examples/s")
    verdict = {True: "FITS", False: "DOES NOT FIT", None: "MEMORY NOT CHECKED"}[r.fits]
    lines.append(f"  {verdict}: {r.reason}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Entry point of `tpubench fit` (`argv` = the words after `fit`)."""
    from tpubench import config as config_lib
    from tpubench import helptext, registry
    from tpubench.platform import topology

    parser = helptext.Parser(
        prog="tpubench fit",
        usage="tpubench fit WORKLOAD --config=CONFIG --topology=CHIP:AxBxC [--json] "
              "[--config.KEY=VALUE ...]",
        description=helptext.paragraph(
            "Will CONFIG fit that slice, and how fast could a step be at best? AOT-compile "
            "WORKLOAD's train and eval steps for the target topology (no such hardware needed) "
            "and report memory per device, FLOPs per step and a roofline bound. Exit status 0: "
            "fits, 1: does not fit (the reason is printed), 2: bad input. --config.KEY=VALUE "
            "flags override config keys, as for `tpubench run`."),
        epilog=helptext.epilog("tpubench fit resnet --config=full --topology=v5p:2x2x2",
                               "tpubench fit bert --config=full --topology=v4:2x2x1 --json",
                               "tpubench fit resnet --config=full --topology=v5e:2x2 "
                               "--config.data.global_batch_size=1024"))
    parser.add_argument("workload", help="a workload name (listed below)")
    parser.add_argument("--config", required=True, help="config name (full, mini, ...) or path")
    parser.add_argument("--topology", required=True,
                        help="target, e.g. v5p:2x2x2, v4:2x2x1, v5e:2x2, cpu:1")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    overrides, words = config_lib.split_overrides(argv)
    args, bad = parser.parse_known_args(words)
    if bad:
        raise UsageError(f"Unrecognized arguments: {' '.join(bad)} (overrides are "
                         "--config.KEY=VALUE or --config.KEY VALUE).")
    topology.parse(args.topology)  # unknown or malformed topology -> UsageError, before loading
    registry.workload_class(args.workload)  # unknown workload -> UsageError
    cfg = config_lib.load(args.workload, args.config, overrides)
    if not cfg.workload:
        cfg.workload = args.workload
    # Compiling a full config for a pod slice takes minutes: a heartbeat says it is alive (on
    # stderr under --json, so stdout stays one JSON document).
    with heartbeat(f"tpubench fit: compiling {args.workload} --config={args.config} for "
                   f"{args.topology}", stream=sys.stderr if args.json else sys.stdout):
        report = fit(cfg, args.topology)
    print(json.dumps(report.as_dict()) if args.json else format_report(report), flush=True)
    return 0 if report.fits in (True, None) else 1
