"""The v0.7 3d-unet reference's weights into this model: its ONNX model (zenodo 3928973,
`224_224_160.onnx`, exported from the nnU-Net PyTorch checkpoint by unet_pytorch_to_onnx.py),
the PyTorch state dict of that checkpoint (zenodo 3904106, fold_1, `model_final_checkpoint.
model`: `torch.load(...)["state_dict"]`) saved as `.npz`, or the `.model` itself when torch is
importable.

Names (Generic_UNet's module tree; the ONNX export keeps them as initializer names):
  conv_blocks_context.{d}.blocks.{i}.{conv,instnorm}.{weight,bias}   encoder stage d < 5
  conv_blocks_context.5.{i}.blocks.0.{conv,instnorm}.{weight,bias}   bottleneck
  conv_blocks_localization.{u}.{i}.blocks.0.{conv,instnorm}.*       decoder stage u
  tu.{u}.weight                                                       ConvTranspose3d
  seg_outputs.{u}.weight                                              1x1x1 heads
Layouts: Conv3d weight [out, in, kd, kh, kw] -> Flax [kd, kh, kw, in, out]; ConvTranspose3d
weight [in, out, kd, kh, kw] -> spatially flipped, [kd, kh, kw, in, out] (lax.conv_transpose
without transpose_kernel correlates with the kernel reversed); instance norm weight/bias ->
scale/bias. The spatial axes keep their order: the reference's [N, 4, 224, 224, 160] is our
[N, 224, 224, 160, 4]. Every parameter must be in the file with its shape; anything else is a
`UsageError` naming the first mismatches.

    python -m workloads.unet3d.convert 224_224_160.onnx WORKDIR [--config=full]
    tpubench infer unet3d --config=full --params=WORKDIR --scenario=Offline ...
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

from tpubench.errors import UsageError

HOW = ("Pass the reference's 224_224_160.onnx (zenodo record 3928973), or its PyTorch "
       "state dict as .npz: np.savez('unet.npz', **{k: v.numpy() for k, v in torch.load("
       "'model_final_checkpoint.model', map_location='cpu')['state_dict'].items()}).")


def read_weights(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """name -> array of an ONNX model's initializers, an .npz state dict, or a torch file."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise UsageError(f"3D U-Net weights {path!r} do not exist. {HOW}")
    if path.endswith(".npz"):
        with np.load(path) as f:
            return {k: f[k] for k in f.files}
    if path.endswith(".onnx"):
        try:
            import onnx
            from onnx import numpy_helper
        except ImportError as e:
            raise UsageError("Reading .onnx needs the `onnx` package: pip install "
                             "'tpubench[medical]'.") from e
        model = onnx.load(path)
        return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    try:
        import torch
    except ImportError as e:
        raise UsageError(f"{path!r} is neither .onnx nor .npz, and torch is not installed to "
                         f"read it. {HOW}") from e
    ckpt = torch.load(path, map_location="cpu")
    state = ckpt.get("state_dict", ckpt)
    return {k: v.numpy() for k, v in state.items()}


def torch_name(path: tuple[str, ...], num_pools: int) -> str:
    """The PyTorch state-dict name of a Flax param path, e.g. ("context_0_1", "conv",
    "kernel") -> "conv_blocks_context.0.blocks.1.conv.weight"."""
    head = path[0]
    kind, *idx = head.rsplit("_", 2) if head.startswith(("context", "localization")) else (
        head.rsplit("_", 1))
    leaf = {"kernel": "weight", "scale": "weight", "bias": "bias"}[path[-1]]
    if kind == "context":
        d, i = (int(v) for v in idx)
        prefix = (f"conv_blocks_context.{d}.{i}.blocks.0" if d == num_pools else
                  f"conv_blocks_context.{d}.blocks.{i}")
        return f"{prefix}.{path[1]}.{leaf}"
    if kind == "localization":
        u, i = (int(v) for v in idx)
        return f"conv_blocks_localization.{u}.{i}.blocks.0.{path[1]}.{leaf}"
    if kind in ("tu", "seg_outputs"):
        return f"{kind}.{int(idx[0])}.{leaf}"
    raise ValueError(f"no PyTorch name for {path}")


def to_flax(name: str, value: np.ndarray) -> np.ndarray:
    """One PyTorch array in the Flax layout (see the module docstring)."""
    v = np.asarray(value, np.float32)
    if name.startswith("tu."):
        return np.ascontiguousarray(np.flip(v, (2, 3, 4)).transpose(2, 3, 4, 0, 1))
    if v.ndim == 5:
        return np.ascontiguousarray(v.transpose(2, 3, 4, 1, 0))
    return v


def convert(state: dict[str, np.ndarray], abstract_params: Any, num_pools: int) -> Any:
    """Params shaped as `abstract_params` (unboxed ShapeDtypeStructs) from `state`."""
    import flax

    flat = flax.traverse_util.flatten_dict(abstract_params)
    out, problems, used = {}, [], set()
    for path, leaf in flat.items():
        name = torch_name(path, num_pools)
        if name not in state:
            problems.append(f"{name} missing")
            continue
        value = to_flax(name, state[name])
        if value.shape != tuple(leaf.shape):
            problems.append(f"{name}: {tuple(np.shape(state[name]))} gives {value.shape}, the "
                            f"model needs {tuple(leaf.shape)}")
            continue
        used.add(name)
        out[path] = value
    extra = sorted(k for k in state if k not in used and not k.endswith("num_batches_tracked")
                   and _is_param_name(k))
    problems += [f"{k} is not a parameter of this model" for k in extra]
    if problems:
        raise UsageError(f"The weights do not match this 3D U-Net ({len(problems)} problems; "
                         f"first: {'; '.join(problems[:4])}). Is --config the model the file "
                         f"holds (full: 4 modalities, 32..320 features, 5 pools)? {HOW}")
    return flax.traverse_util.unflatten_dict(out)


def _is_param_name(name: str) -> bool:
    return name.split(".")[0] in ("conv_blocks_context", "conv_blocks_localization", "tu",
                                  "seg_outputs")


def write_checkpoint(params: Any, workload: Any, workdir: str | os.PathLike) -> None:
    """A workdir whose checkpoint `tpubench infer --params=WORKDIR` serves (step 0)."""
    import jax
    import jax.numpy as jnp

    from tpubench.loops import checkpoint
    from tpubench.loops.progress import Progress
    from tpubench.loops.steps import TrainState

    params = jax.tree.map(jnp.asarray, params)
    state = TrainState(step=jnp.zeros([], jnp.int32), params=params,
                       opt_state=workload.optimizer().init(params), model_state={},
                       rng=jax.random.PRNGKey(0))
    with checkpoint.manager(workdir) as mgr:
        checkpoint.save(mgr, 0, state, Progress())


def main(argv: list[str] | None = None) -> int:
    """python -m workloads.unet3d.convert WEIGHTS WORKDIR [--config=full]"""
    from tpubench import config as config_lib
    from tpubench import registry
    from tpubench.loops import steps

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("weights")
    p.add_argument("workdir")
    p.add_argument("--config", default="full")
    args = p.parse_args(argv)
    try:
        workload = registry.create(config_lib.load("unet3d", args.config, {}))
        params = convert(read_weights(args.weights), steps.abstract_state(workload).params,
                         int(workload.config.model.num_pools))
    except UsageError as e:
        print(f"tpubench: error: {e}", file=sys.stderr)
        return 2
    write_checkpoint(params, workload, os.path.abspath(args.workdir))
    print(f"wrote {args.workdir}: serve it with tpubench infer unet3d --config={args.config} "
          f"--params={args.workdir} --scenario=Offline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
