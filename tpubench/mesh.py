"""The device mesh and the shardings of state and batches, from config alone.

Axes are ("data", "fsdp", "tensor"). `config.run.mesh` gives the per-slice (ICI) shape, `-1` meaning
"fill with the remaining devices"; `config.run.dcn_mesh` the across-slice (DCN) shape for
multi-slice.
Params carry logical axis names (`nn.with_logical_partitioning`); `logical_axis_rules` maps them to
mesh axes. FSDP (ZeRO-3 style) is a rule over shapes, not names: any param or optimizer-state array
at least `fsdp_min_size` big gets its largest still-unsharded divisible dimension split over
"fsdp", so every workload gets it without per-workload code.

Which logical names the harness knows (`DEFAULT_RULES`): "batch", and the transformer vocabulary
("vocab", "embed", "mlp", "heads", "kv", "length") because more than one workload uses it
(transformer and BERT; ResNet's classifier also uses "embed"), and every future language model
will. A name only one workload uses belongs to that workload's `Workload.logical_axis_rules()`
(ResNet's "conv_*" and "classes", DLRM's "embed_rows"), which come first and win. A param whose
logical name no rule maps is an error (`state_shardings`): flax would silently replicate it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import ml_collections
import numpy as np
from flax import linen as nn
from jax.experimental import mesh_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from tpubench.errors import UsageError

AXES = ("data", "fsdp", "tensor")
BATCH_AXES = ("data", "fsdp")

# Logical name -> mesh axis (or axes, or None = replicated): the generic names only (module
# docstring). Workloads prepend their own with `Workload.logical_axis_rules()`.
DEFAULT_RULES: tuple[tuple[str, Any], ...] = (
    ("batch", BATCH_AXES),
    ("vocab", "tensor"),
    ("mlp", "tensor"),
    ("heads", "tensor"),
    ("kv", None),
    ("embed", None),
    ("length", None),
)


def _named(dims: Sequence[int]) -> dict[str, int]:
    return dict(zip(AXES, dims, strict=True))


def _resolve_shape(shape: dict[str, int], n: int, what: str) -> list[int]:
    dims = [int(shape[a]) for a in AXES]
    fills = [i for i, d in enumerate(dims) if d == -1]
    if len(fills) > 1:
        raise UsageError(f"{what}: at most one axis may be -1 (fill), got {_named(dims)}.")
    known = math.prod(d for d in dims if d != -1)
    if fills:
        if known <= 0 or n % known:
            raise UsageError(
                f"{what} {_named(dims)} cannot fill {n} devices: the fixed axes' "
                f"product {known} does not divide {n}."
            )
        dims[fills[0]] = n // known
    if any(d <= 0 for d in dims):
        raise UsageError(f"{what}: axis sizes must be positive or -1, got {_named(dims)}.")
    return dims


def mesh_shape(config: ml_collections.ConfigDict, num_devices: int) -> tuple[list[int], list[int]]:
    """(ici_shape, dcn_shape) for `num_devices`, with -1 filled; `UsageError` if it can't fit."""
    dcn = _resolve_shape(config.run.dcn_mesh, num_devices, "dcn_mesh")
    slices = math.prod(dcn)
    if num_devices % slices:
        raise UsageError(f"dcn_mesh {dcn} ({slices} slices) does not divide {num_devices} devices.")
    ici = _resolve_shape(config.run.mesh, num_devices // slices, "mesh")
    total = math.prod(ici) * slices
    if total != num_devices:
        raise UsageError(
            f"The mesh {_named(ici)} x dcn {_named(dcn)} has {total} devices but "
            f"this host sees {num_devices}. Make the product equal {num_devices}, or use -1 on "
            "one axis to fill, e.g. --config.run.mesh.data=-1."
        )
    return ici, dcn


def build_mesh(config: ml_collections.ConfigDict, devices: Sequence[Any] | None = None) -> Mesh:
    """The Mesh over `devices` (default: all) with axes ("data", "fsdp", "tensor")."""
    devices = list(jax.devices() if devices is None else devices)
    ici, dcn = mesh_shape(config, len(devices))
    if math.prod(dcn) > 1:
        grid = mesh_utils.create_hybrid_device_mesh(ici, dcn, devices=devices)
    else:
        try:
            grid = mesh_utils.create_device_mesh(ici, devices=devices)
        except (AssertionError, NotImplementedError, ValueError):
            grid = np.array(devices).reshape(ici)
    return Mesh(grid, AXES)


def with_shardings(tree: Any, shardings: Any) -> Any:
    """ShapeDtypeStructs of `tree` carrying `shardings` (AOT lowering, orbax restore targets)."""
    return jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), tree, shardings
    )


def batch_divisor(mesh: Mesh) -> int:
    """How many ways the batch is split (data x fsdp)."""
    return mesh.shape["data"] * mesh.shape["fsdp"]


def check_batch(global_batch_size: int, mesh: Mesh, what: str = "data.global_batch_size") -> None:
    """`UsageError` unless the batch splits evenly over the batch axes and processes."""
    ways = batch_divisor(mesh)
    if global_batch_size % ways:
        raise UsageError(
            f"{what}={global_batch_size} does not divide across the mesh's batch axes "
            f"(data x fsdp = {ways}). Use a multiple of {ways}, e.g. "
            f"--config.{what}={ways * max(1, round(global_batch_size / ways))}."
        )
    if global_batch_size % jax.process_count():
        raise UsageError(
            f"{what}={global_batch_size} does not divide across {jax.process_count()} processes."
        )


def batch_sharding(mesh: Mesh, leading_dims: int = 0) -> NamedSharding:
    """Sharding of a batch array: examples over the batch axes, after `leading_dims` unsharded
    dims (1 for a block of steps [K, B, ...])."""
    return NamedSharding(mesh, P(*([None] * leading_dims), BATCH_AXES))


def rules(extra: Sequence[tuple[str, Any]] = ()) -> tuple[tuple[str, Any], ...]:
    """Workload rules first (they win), then the defaults."""
    return tuple(extra) + DEFAULT_RULES


def logical_names(logical_specs: Any) -> set[str]:
    """Every logical axis name in a pytree of logical PartitionSpecs."""
    specs = jax.tree.leaves(logical_specs, is_leaf=lambda x: isinstance(x, P))
    return {name for spec in specs if isinstance(spec, P) for entry in spec if entry
            for name in ((entry,) if isinstance(entry, str) else entry)}


def check_rules_cover(logical_specs: Any, axis_rules: Sequence[tuple[str, Any]]) -> None:
    """`ValueError` naming the logical axis names of the params that no rule maps (flax would
    replicate them silently: a sharding lost without a word)."""
    missing = sorted(logical_names(logical_specs) - {name for name, _ in axis_rules})
    if missing:
        raise ValueError(
            f"The model's params use logical axis names {missing} that no rule maps. Add them "
            "to the workload's `logical_axis_rules()` (None = replicated), or use a generic name "
            f"of tpubench.mesh.DEFAULT_RULES: {[name for name, _ in DEFAULT_RULES]}."
        )


# What the FSDP rule did with a leaf, and why (`fsdp_rule`; the sharding report lists them).
FSDP_SHARDED = "fsdp_rule"  # split over "fsdp" by the shape rule
FSDP_BY_LOGICAL_RULE = "logical_rule"  # already over "fsdp" through a logical-axis rule
FSDP_OFF = "fsdp_off"  # the mesh's fsdp axis has size 1
FSDP_BELOW_MIN_SIZE = "below_fsdp_min_size"  # fewer values than config.run.fsdp_min_size
FSDP_NO_DIVISIBLE_DIM = "no_divisible_dim"  # no free dimension divisible by the fsdp size


def fsdp_rule(spec: P, shape: tuple[int, ...], fsdp: int, min_size: int) -> tuple[P, str]:
    """(spec after the FSDP shape rule, why): a leaf of at least `min_size` values not yet over
    "fsdp" gets its largest free dimension divisible by `fsdp` split over "fsdp"; otherwise
    `spec` is kept and the reason says why (one of the FSDP_* codes above)."""
    if fsdp <= 1:
        return spec, FSDP_OFF
    axes = list(spec) + [None] * (len(shape) - len(spec))
    used = {a for entry in axes if entry for a in ((entry,) if isinstance(entry, str) else entry)}
    if "fsdp" in used:
        return spec, FSDP_BY_LOGICAL_RULE
    if math.prod(shape) < min_size:
        return spec, FSDP_BELOW_MIN_SIZE
    for dim in sorted(range(len(shape)), key=lambda d: -shape[d]):
        if axes[dim] is None and shape[dim] % fsdp == 0:
            axes[dim] = "fsdp"
            return P(*axes), FSDP_SHARDED
    return spec, FSDP_NO_DIVISIBLE_DIM


def state_shardings(
    abstract_boxed: Any, mesh: Mesh, axis_rules: Sequence[tuple[str, Any]], fsdp_min_size: int
) -> Any:
    """NamedShardings for a (possibly `nn.Partitioned`-boxed) abstract state pytree.

    Logical names go through `axis_rules`; then the FSDP shape rule applies; unannotated leaves
    (scalars, BN statistics) are replicated unless FSDP picks them.
    """
    logical = nn.get_partition_spec(abstract_boxed)
    check_rules_cover(logical, axis_rules)
    mesh_specs = nn.logical_to_mesh(logical, axis_rules)
    unboxed = nn.meta.unbox(abstract_boxed)
    fsdp = mesh.shape["fsdp"]

    def to_sharding(spec, leaf):
        spec = spec if isinstance(spec, P) else P()
        return NamedSharding(mesh, fsdp_rule(spec, tuple(leaf.shape), fsdp, fsdp_min_size)[0])

    return jax.tree.map(
        to_sharding, mesh_specs, unboxed, is_leaf=lambda x: isinstance(x, P) or x is None
    )
