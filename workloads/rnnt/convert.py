"""The reference's published RNN-T weights -> this model's params.

The MLPerf Inference v0.7 RNN-T checkpoint (`rnnt.pt`, Zenodo record 3662521, linked from
mlcommons/inference speech_recognition/rnnt/README.md) is a torch dict whose `state_dict` holds
the `RNNT` module's tensors under the names of model_separable_rnnt.py, e.g.
`encoder.pre_rnn.lstm.weight_ih_l0`, `prediction.embed.weight`, `joint_net.0.weight` (pytorch_SUT.py
renames `joint_net` to `joint.net`; both spellings are accepted here), plus the featurizer's
`audio_preprocessor.featurizer.fb` / `.window`, which this model recomputes and are dropped.
The layouts already match (`workloads.rnnt.model` keeps torch's), so conversion is renaming.

    python -m workloads.rnnt.convert --input=rnnt.pt --output=DIR   # needs torch to read .pt
    python -m workloads.rnnt.convert --input=weights.npz --output=DIR  # name -> array, no torch

writes DIR/checkpoints in the harness's format (the params inside a fresh train state), which
`tpubench infer rnnt --config=full --params=DIR` loads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

IGNORED = ("audio_preprocessor.",)
_LSTM = re.compile(r"^(weight_ih|weight_hh|bias_ih|bias_hh)_l(\d+)$")


def _lstm_target(prefix: tuple[str, ...], rest: str) -> tuple[str, ...]:
    m = _LSTM.match(rest)
    if not m:
        raise KeyError(rest)
    return (*prefix, f"layer_{m.group(2)}", m.group(1))


def target_path(name: str) -> tuple[str, ...] | None:
    """The params path of one reference tensor name; None for the featurizer's buffers."""
    if name.startswith("module."):
        name = name[len("module."):]
    if name.startswith(IGNORED):
        return None
    name = name.replace("joint.net.", "joint_net.")
    for ref, ours in (("encoder.pre_rnn.lstm.", ("encoder", "pre_rnn")),
                      ("encoder.post_rnn.lstm.", ("encoder", "post_rnn")),
                      ("prediction.dec_rnn.lstm.", ("prediction", "dec_rnn"))):
        if name.startswith(ref):
            return _lstm_target(ours, name[len(ref):])
    if name == "prediction.embed.weight":
        return ("prediction", "embed")
    m = re.match(r"^joint_net\.(\d+)\.(weight|bias)$", name)
    if m:
        # Sequential(Linear, ReLU, Dropout, Linear): index 0 is fc1, the last Linear fc2
        return ("joint_net", "fc1" if m.group(1) == "0" else "fc2", m.group(2))
    raise KeyError(f"unknown tensor {name!r} in the RNN-T checkpoint")


def convert(state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """Reference name -> array  =>  nested params dict (float32 numpy)."""
    params: dict[str, Any] = {}
    for name, value in state_dict.items():
        path = target_path(name)
        if path is None:
            continue
        node = params
        for key in path[:-1]:
            node = node.setdefault(key, {})
        if path[-1] in node:
            raise KeyError(f"two tensors map to {'/'.join(path)}")
        node[path[-1]] = np.asarray(value, dtype=np.float32)
    return params


def check_shapes(params: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """ValueError unless `params` has exactly the leaves and shapes of `expected`."""
    import jax

    got = {jax.tree_util.keystr(k): np.shape(v)
           for k, v in jax.tree_util.tree_leaves_with_path(params)}
    want = {jax.tree_util.keystr(k): tuple(v.shape)
            for k, v in jax.tree_util.tree_leaves_with_path(expected)}
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items()))
        raise ValueError(f"converted params differ from the model's: {diff[:6]}")


def load_state_dict(path: str) -> dict[str, Any]:
    """name -> array from an .npz, or from a torch checkpoint (`state_dict` inside) via torch."""
    if path.endswith(".npz"):
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    import torch  # optional: only to read the published .pt

    ckpt = torch.load(path, map_location="cpu")
    state = ckpt.get("state_dict", ckpt)
    return {k: v.numpy() for k, v in state.items()}


def write_workdir(params: Mapping[str, Any], workload: Any, workdir: str) -> None:
    """Save `params` as the harness's checkpoint in `workdir` (a fresh optimizer state around
    them), which `tpubench infer --params=workdir` and `checkpoint.restore_variables` read.
    ValueError if they do not fit the workload's config."""
    import jax
    import jax.numpy as jnp
    from flax import linen as nn

    from tpubench.loops import checkpoint, steps
    from tpubench.loops.progress import Progress

    state = jax.jit(lambda r: nn.meta.unbox(steps.boxed_init_fn(workload)(r)))(
        jax.random.PRNGKey(0))
    check_shapes(params, state.params)
    state = state.replace(params=jax.tree_util.tree_map(jnp.asarray, dict(params)))
    with checkpoint.manager(workdir) as mgr:
        checkpoint.save(mgr, 0, state, Progress())


def main(argv: list[str] | None = None) -> None:
    import argparse

    from tpubench import config as config_lib
    from tpubench import registry

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", required=True, help="rnnt.pt (needs torch) or an .npz")
    p.add_argument("--output", required=True, help="the workdir to write the checkpoint in")
    p.add_argument("--config", default="full")
    args = p.parse_args(argv)
    workload = registry.create(config_lib.load("rnnt", args.config, {}))
    write_workdir(convert(load_state_dict(args.input)), workload, args.output)


if __name__ == "__main__":
    main()
