"""Sharding you can see: where every leaf of the train state lives, written at init (untimed).

    <workdir>/sharding.json   per leaf: path, global shape, dtype, logical axis names, the mesh
                              PartitionSpec, bytes, shard shape and bytes per device, and what the
                              FSDP rule did with it (`tpubench.mesh.fsdp_rule`); totals per group
                              (params, opt_state, model_state, ...) and per FSDP outcome
    <workdir>/sharding.txt    the same as a table a person reads

and one line on stdout (process 0) saying how much each device holds and what the FSDP rule left
unsplit, and why: below `fsdp_min_size`, no free dimension divisible by the fsdp size, or already
over "fsdp" through a logical-axis rule. Specs and shard shapes are read from the shardings the
engine compiled with; the FSDP reasons are those of the same rule applied to the same logical
specs. Under `parallelism="pmap"` every leaf is one full copy per device.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import jax
from flax import linen as nn
from jax.sharding import PartitionSpec as P

from tpubench import mesh as mesh_lib

JSON_NAME = "sharding.json"
TEXT_NAME = "sharding.txt"
PMAP = "pmap"  # the FSDP outcome of every leaf under the pmap engine (replicated per device)

REASONS = {
    mesh_lib.FSDP_SHARDED: "split over fsdp by the FSDP rule",
    mesh_lib.FSDP_BY_LOGICAL_RULE: "already over fsdp through a logical-axis rule",
    mesh_lib.FSDP_OFF: "fsdp axis of size 1",
    mesh_lib.FSDP_BELOW_MIN_SIZE: "below fsdp_min_size",
    mesh_lib.FSDP_NO_DIVISIBLE_DIM: "no free dimension divisible by the fsdp size",
    PMAP: "pmap: one full copy per device",
}


def _path(keys: Sequence[Any]) -> str:
    """'params/Conv_0/kernel', 'opt_state/0/trace/Conv_0/kernel' for a tree path."""
    parts = []
    for k in keys:
        for attr in ("name", "key", "idx"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
        else:
            parts.append(str(k))
    return "/".join(parts)


def _spec_list(spec: P) -> list[Any]:
    return [list(e) if isinstance(e, tuple) else e for e in spec]


def _is_spec(x: Any) -> bool:
    return isinstance(x, P) or x is None


def build(abstract_state: Any, shardings: Any, logical_specs: Any,
          axis_rules: Sequence[tuple[str, Any]], mesh_shape: Mapping[str, int],
          fsdp_min_size: int) -> dict[str, Any]:
    """The report of a state: `abstract_state` (ShapeDtypeStructs), its `shardings` (the ones
    compiled with), the logical PartitionSpecs of the boxed state (`nn.get_partition_spec`; None
    under pmap) and the rules, mesh shape and `fsdp_min_size` they went through."""
    flat, _ = jax.tree_util.tree_flatten_with_path(abstract_state)
    sharding_leaves = jax.tree.leaves(shardings)
    if logical_specs is None:
        logical = mesh_specs = [None] * len(flat)
    else:
        logical = jax.tree.leaves(logical_specs, is_leaf=_is_spec)
        mesh_specs = jax.tree.leaves(nn.logical_to_mesh(logical_specs, axis_rules),
                                     is_leaf=_is_spec)
    fsdp = int(mesh_shape.get("fsdp", 1))
    leaves = []
    for (keys, leaf), sharding, names, pre in zip(flat, sharding_leaves, logical, mesh_specs,
                                                  strict=True):
        shape = tuple(int(d) for d in leaf.shape)
        itemsize = getattr(leaf.dtype, "itemsize", 0)
        shard_shape = tuple(int(d) for d in sharding.shard_shape(shape))
        spec = getattr(sharding, "spec", None) if logical_specs is not None else None
        if logical_specs is None:
            reason = PMAP
        else:
            reason = mesh_lib.fsdp_rule(pre if isinstance(pre, P) else P(), shape, fsdp,
                                        fsdp_min_size)[1]
        leaves.append({
            "path": _path(keys),
            "shape": list(shape),
            "dtype": str(leaf.dtype),
            "logical": _spec_list(names) if isinstance(names, P) and any(names) else None,
            "spec": _spec_list(spec) if spec is not None else None,
            "bytes": math.prod(shape) * itemsize,
            "shard_shape": list(shard_shape),
            "bytes_per_device": math.prod(shard_shape) * itemsize,
            "fsdp": reason,
        })
    return {"mesh": {k: int(v) for k, v in mesh_shape.items()},
            "fsdp_min_size": int(fsdp_min_size), "totals": totals(leaves), "leaves": leaves}


def totals(leaves: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Leaf counts and bytes, in all, per group (first path element) and per FSDP outcome."""

    def add(into: dict[str, Any], leaf: Mapping[str, Any]) -> None:
        into["leaves"] = into.get("leaves", 0) + 1
        into["bytes"] = into.get("bytes", 0) + leaf["bytes"]
        into["bytes_per_device"] = into.get("bytes_per_device", 0) + leaf["bytes_per_device"]

    out: dict[str, Any] = {"leaves": 0, "bytes": 0, "bytes_per_device": 0, "groups": {},
                           "fsdp": {}}
    for leaf in leaves:
        add(out, leaf)
        add(out["groups"].setdefault(leaf["path"].split("/")[0], {}), leaf)
        add(out["fsdp"].setdefault(leaf["fsdp"], {}), leaf)
    return out


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _fmt_spec(spec: list[Any] | None) -> str:
    if spec is None:
        return "-"
    return "P(" + ", ".join("None" if e is None else repr(tuple(e)) if isinstance(e, list)
                            else repr(e) for e in spec) + ")"


def summary_line(report: Mapping[str, Any]) -> str:
    """One line: what each device holds, and what the FSDP rule left unsplit and why."""
    t, mesh = report["totals"], report["mesh"]
    shape = " ".join(f"{k}={v}" for k, v in mesh.items())
    head = (f"sharding: {t['leaves']} state leaves, {_size(t['bytes'])} in all, "
            f"{_size(t['bytes_per_device'])} per device (mesh {shape})")
    fsdp = t["fsdp"]
    if PMAP in fsdp:
        return head + "; pmap: every leaf is one full copy per device"
    if mesh_lib.FSDP_OFF in fsdp:
        return head + "; FSDP off (fsdp axis 1)"
    split = fsdp.get(mesh_lib.FSDP_SHARDED, {}).get("leaves", 0)
    left = []
    for reason in (mesh_lib.FSDP_BELOW_MIN_SIZE, mesh_lib.FSDP_NO_DIVISIBLE_DIM,
                   mesh_lib.FSDP_BY_LOGICAL_RULE):
        if reason not in fsdp:
            continue
        text = REASONS[reason]
        if reason == mesh_lib.FSDP_BELOW_MIN_SIZE:
            text = f"below fsdp_min_size={report['fsdp_min_size']}"
        elif reason == mesh_lib.FSDP_NO_DIVISIBLE_DIM:
            text = f"no free dimension divisible by fsdp={mesh['fsdp']}"
        item = (f"{fsdp[reason]['leaves']} {text} "
                f"({_size(fsdp[reason]['bytes_per_device'])} per device")
        if reason == mesh_lib.FSDP_NO_DIVISIBLE_DIM:
            named = [f"{leaf['path']} {tuple(leaf['shape'])}" for leaf in report["leaves"]
                     if leaf["fsdp"] == reason][:3]
            item += ": " + ", ".join(named) + (", ..." if fsdp[reason]["leaves"] > 3 else "")
        left.append(item + ")")
    return (head + f"; FSDP split {split} leaves, left unsplit: "
            + ("; ".join(left) if left else "none"))


def text(report: Mapping[str, Any]) -> str:
    """sharding.txt: the summary, totals per group and per FSDP outcome, then one row per leaf."""
    t = report["totals"]
    lines = [summary_line(report), "", f"fsdp_min_size: {report['fsdp_min_size']}", "",
             f"{'group':<14}{'leaves':>8}{'bytes':>14}{'per device':>14}"]
    for name, g in t["groups"].items():
        lines.append(f"{name:<14}{g['leaves']:>8}{_size(g['bytes']):>14}"
                     f"{_size(g['bytes_per_device']):>14}")
    lines += ["", f"{'fsdp outcome':<48}{'leaves':>8}{'per device':>14}"]
    for reason, g in t["fsdp"].items():
        lines.append(f"{REASONS.get(reason, reason):<48}{g['leaves']:>8}"
                     f"{_size(g['bytes_per_device']):>14}")
    rows = [(leaf["path"], str(tuple(leaf["shape"])), leaf["dtype"], _fmt_spec(leaf["spec"]),
             _size(leaf["bytes_per_device"]), leaf["fsdp"]) for leaf in report["leaves"]]
    header = ("path", "shape", "dtype", "spec", "per device", "fsdp")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines.append("")
    for row in [header, *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"


def _write(path: pathlib.Path, content: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(content)
    os.replace(tmp, path)


def write(workdir: str | os.PathLike, engine: Any) -> pathlib.Path:
    """Build the report of `engine`'s train state, write sharding.json and sharding.txt into
    `workdir` and print the summary line (process 0 only); returns the JSON file's path."""
    mesh = getattr(engine, "mesh", None)
    mesh_shape = dict(mesh.shape) if mesh is not None else {"devices": len(jax.local_devices())}
    report = build(engine.abstract_state, engine.state_shardings, engine.logical_specs,
                   getattr(engine, "rules", ()), mesh_shape, engine.config.run.fsdp_min_size)
    path = pathlib.Path(workdir) / JSON_NAME
    if jax.process_index() == 0:
        _write(path, json.dumps(report, indent=1) + "\n")
        _write(path.with_name(TEXT_NAME), text(report))
        print(summary_line(report) + f". Per leaf: {path.with_name(TEXT_NAME)}", flush=True)
    return path
