"""Fine-tuning from a `bert` pre-training run of this suite: `--config.model.init_params=DIR`.

DIR is the `--workdir` of a finished `tpubench run bert` (pre-training) run; its latest orbax
checkpoint (`DIR/checkpoints/<step>/state`) is read without a target tree, so the pre-training
run's optimizer and config need not be rebuilt. The encoder (`embeddings`, `layer_<i>`) replaces
the fine-tuning model's random values; the pre-training heads (`pooler`, `nsp`, `mlm_*`) are
dropped and a new head (SQuAD's `qa_outputs`) keeps its random init. An embedding table of the
new model may have more rows than the checkpoint's (a longer sequence, a vocabulary extended
after the pre-training one): the checkpoint's rows come first, the rest keep their random init.
Any other shape difference is a `UsageError`, found from the checkpoint's metadata before any
compute (`check`). `check_all` / `restore_all` read every parameter of a run (a fine-tuned
SQuAD run, head included: a distillation teacher, `distill.py`), shapes exact.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
from flax import linen as nn
from flax import traverse_util

from tpubench.errors import UsageError
from tpubench.loops import checkpoint

ENCODER = ("embeddings", "layer_")  # top-level names carried over
EXTENDABLE = ("word_embeddings", "position_embeddings")  # tables that may grow by rows
HINT = ("--config.model.init_params takes the --workdir of a finished `tpubench run bert "
        "--config=mini` (pre-training) run.")


def _state_dir(run_dir: str, hint: str = HINT, key: str = "init_params") -> str:
    run_dir = os.path.expanduser(run_dir)
    step = checkpoint.latest_step(run_dir) if os.path.isdir(run_dir) else None
    if step is None:
        raise UsageError(f"{key}={run_dir!r}: no checkpoint under "
                         f"{os.path.join(run_dir, checkpoint.CHECKPOINT_DIR)}. {hint}")
    return os.path.abspath(os.path.join(run_dir, checkpoint.CHECKPOINT_DIR, str(step), "state"))


def _is_encoder(path: tuple[str, ...]) -> bool:
    return path[0] == ENCODER[0] or path[0].startswith(ENCODER[1])


def _shapes(run_dir: str, hint: str = HINT,
            key: str = "init_params") -> dict[tuple[str, ...], tuple[int, ...]]:
    """Path -> shape of every parameter in the checkpoint, from its metadata only."""
    tree = checkpoint.metadata_tree(_state_dir(run_dir, hint, key))
    params = tree.get("params") if hasattr(tree, "get") else None
    if not params:
        raise UsageError(f"{key}={run_dir!r}: its checkpoint holds no params. {hint}")
    return {p: tuple(m.shape) for p, m in traverse_util.flatten_dict(params).items()}


def check(run_dir: str, params_like: Any) -> None:
    """`UsageError` unless `run_dir`'s checkpoint has an encoder that fits `params_like` (the
    fine-tuning model's params, abstract): every encoder leaf of the model present, same
    shapes but for extra rows of `EXTENDABLE` tables."""
    have = _shapes(run_dir)
    want = {p: tuple(x.shape) for p, x in
            traverse_util.flatten_dict(nn.unbox(params_like)).items() if _is_encoder(p)}
    for path, shape in want.items():
        got = have.get(path)
        key = "/".join(path)
        if got is None:
            raise UsageError(f"init_params={run_dir!r}: the checkpoint has no {key}; it is not a "
                             f"BERT run with this model's layers. {HINT}")
        grows = (path[-2] in EXTENDABLE and got[1:] == shape[1:] and got[0] <= shape[0])
        if got != shape and not grows:
            raise UsageError(f"init_params={run_dir!r}: {key} has shape {got} in the checkpoint, "
                             f"{shape} in this model (model sizes must match the pre-training "
                             "run's).")


def check_all(run_dir: str, params_like: Any, hint: str, key: str) -> None:
    """`UsageError` (ending with `hint`) unless `run_dir`'s checkpoint holds exactly the
    parameters of `params_like` (abstract), same paths and shapes; `key` names the config key
    in the message."""
    have = _shapes(run_dir, hint, key)
    want = {p: tuple(x.shape) for p, x in
            traverse_util.flatten_dict(nn.unbox(params_like)).items()}
    for path in sorted(set(have) ^ set(want)):
        where = "this model" if path in want else "the checkpoint"
        raise UsageError(f"{run_dir!r}: {'/'.join(path)} is only in {where}. {hint}")
    for path, shape in want.items():
        if have[path] != shape:
            raise UsageError(f"{run_dir!r}: {'/'.join(path)} has shape {have[path]} in the "
                             f"checkpoint, {shape} in this model. {hint}")


def _load(run_dir: str) -> dict[tuple[str, ...], np.ndarray]:
    restored = ocp.StandardCheckpointer().restore(_state_dir(run_dir))
    flat = traverse_util.flatten_dict(restored["params"])
    return {p: np.asarray(v, np.float32) for p, v in flat.items()}


def load_encoder(run_dir: str) -> dict[tuple[str, ...], np.ndarray]:
    """Path -> value of every encoder parameter of `run_dir`'s latest checkpoint (host)."""
    return {p: v for p, v in _load(run_dir).items() if _is_encoder(p)}


def restore_all(like: Any, run_dir: str) -> Any:
    """Every parameter of `run_dir`'s latest checkpoint, in the tree (and the `nn.Partitioned`
    boxes) of `like` (the model's params, abstract or not); read by a host callback, so this
    traces. Shapes as `check_all` checked them."""
    flat_like = traverse_util.flatten_dict(like)
    # The boxes' values as they are: unboxing abstract values under a mesh (the engine's init)
    # would put sharding constraints on them.
    flat = {p: b.value if isinstance(b, nn.Partitioned) else b for p, b in flat_like.items()}
    shapes = {"/".join(p): jax.ShapeDtypeStruct(v.shape, jnp.float32) for p, v in flat.items()}

    def load() -> dict[str, np.ndarray]:
        return {"/".join(p): v for p, v in _load(run_dir).items()}

    values = jax.pure_callback(load, shapes)
    out = {}
    for p, box in flat_like.items():
        value = values["/".join(p)].astype(flat[p].dtype)
        out[p] = box.replace_boxed(value) if isinstance(box, nn.Partitioned) else value
    return traverse_util.unflatten_dict(out)


def restore_encoder(boxed: Any, run_dir: str) -> Any:
    """`boxed` (the model's freshly initialised params) with the encoder of `run_dir`'s
    checkpoint in place; read by a host callback, so this traces (see `BertWorkload.init`)."""
    flat_boxed = traverse_util.flatten_dict(boxed)
    flat = {p: v for p, v in traverse_util.flatten_dict(nn.unbox(boxed)).items()
            if _is_encoder(p)}
    shapes = {"/".join(p): jax.ShapeDtypeStruct(v.shape, jnp.float32) for p, v in flat.items()}

    def load(*current: np.ndarray) -> dict[str, np.ndarray]:
        loaded = load_encoder(run_dir)
        out = {}
        for (p, _), value in zip(flat.items(), current, strict=True):
            value = np.array(value, np.float32)
            got = loaded[p]
            value[:got.shape[0]] = got  # all of it, or the leading rows of a grown table
            out["/".join(p)] = value
        return out

    values = jax.pure_callback(load, shapes, *(v.astype(jnp.float32) for v in flat.values()))
    for p, box in flat_boxed.items():
        key = "/".join(p)
        if key in values:
            value = values[key].astype(flat[p].dtype)
            flat_boxed[p] = (box.replace_boxed(value) if isinstance(box, nn.Partitioned)
                             else value)
    return traverse_util.unflatten_dict(flat_boxed)
