"""The v0.7 reference's target model (a TensorFlow checkpoint of its dual net) as the .npz that
`match.load_target` reads (`eval.target_file`).

    python -m workloads.minigo.convert CHECKPOINT_PREFIX OUT.npz [--config=full]
        [--input_layout=nhwc|nchw]

The reference (mlcommons/training v0.7, reinforcement/tensorflow/minigo/dual_net.py,
`model_inference_fn`) builds its net with `tf.layers` and no variable scopes, so a checkpoint
(`model.ckpt-N.index` / `.data-*`: what `train.py` writes and `freeze_graph` freezes) names its
variables by creation order: `conv2d[_i]/kernel` (HWIO, as Flax's), `batch_normalization[_i]/
{gamma, beta, moving_mean, moving_variance}` (the heads' without gamma and beta: center=False,
scale=False), `dense[_i]/{kernel, bias}`. Creation order: the stem, then per residual block two
conv + BN pairs, then the policy head's conv + BN and dense, then the value head's conv + BN and
two denses. With `--input_layout=nchw` (the reference's GPU layout) the heads' flattened
activations are (C, H, W), reordered here to Flax's (H, W, C).

Not read: the frozen `.minigo` / `.pb` graphs (constants, not variables). Note that the v0.7
runs use `--input_features=mlperf07` (13 input planes: 4 moves of history, colour, liberties,
would-capture), while this workload feeds pgx's 17 AlphaGo Zero planes: such a target's stem
does not fit, and the converter says so.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError


def _nth(kind: str, i: int) -> str:
    return kind if i == 0 else f"{kind}_{i}"


def reference_names(trunk_layers: int) -> dict[str, str]:
    """Our '/'-joined variable path (`match.save_target`'s keys) -> the reference's TF name."""
    names: dict[str, str] = {}

    def conv_bn(ours_conv: str, ours_bn: str, i: int, affine: bool) -> None:
        names[f"params/{ours_conv}/kernel"] = f"{_nth('conv2d', i)}/kernel"
        bn = _nth("batch_normalization", i)
        if affine:
            names[f"params/{ours_bn}/scale"] = f"{bn}/gamma"
            names[f"params/{ours_bn}/bias"] = f"{bn}/beta"
        names[f"batch_stats/{ours_bn}/mean"] = f"{bn}/moving_mean"
        names[f"batch_stats/{ours_bn}/var"] = f"{bn}/moving_variance"

    def dense(ours: str, i: int) -> None:
        names[f"params/{ours}/kernel"] = f"{_nth('dense', i)}/kernel"
        names[f"params/{ours}/bias"] = f"{_nth('dense', i)}/bias"

    conv_bn("stem", "stem_bn", 0, True)
    for b in range(trunk_layers):
        conv_bn(f"res{b}_a", f"res{b}_bn1", 2 * b + 1, True)
        conv_bn(f"res{b}_b", f"res{b}_bn2", 2 * b + 2, True)
    conv_bn("policy_conv", "policy_bn", 2 * trunk_layers + 1, False)
    dense("policy_fc", 0)
    conv_bn("value_conv", "value_bn", 2 * trunk_layers + 2, False)
    dense("value_fc", 1)
    dense("value_out", 2)
    return names


def _chw_to_hwc(kernel: np.ndarray, n: int) -> np.ndarray:
    """A dense kernel over flattened (C, H, W) activations, reordered for (H, W, C)."""
    c = kernel.shape[0] // (n * n)
    return kernel.reshape(c, n, n, -1).transpose(1, 2, 0, 3).reshape(kernel.shape)


def convert(get: Callable[[str], np.ndarray], shapes: Mapping[str, Any], like: Any,
            trunk_layers: int, board_size: int, input_layout: str = "nhwc",
            source: str = "the checkpoint") -> dict[str, np.ndarray]:
    """{our path: array} from the reference's variables (`get(name)`, `shapes[name]`), checked
    against `like` (this config's variables): `UsageError` naming the variable on a missing
    one or another shape, before anything is written."""
    if input_layout not in ("nhwc", "nchw"):
        raise UsageError(f"--input_layout={input_layout!r}: use nhwc or nchw.")
    wanted = {"/".join(str(getattr(k, "key", k)) for k in kp): leaf
              for kp, leaf in jax.tree_util.tree_flatten_with_path(like)[0]}
    names = reference_names(trunk_layers)
    missing = [tf for tf in names.values() if tf not in shapes]
    if missing or set(names) != set(wanted):
        raise UsageError(
            f"minigo convert: {source} lacks {missing[:4]} (of {len(names)} variables of a "
            f"{trunk_layers}-block dual net; it holds {sorted(shapes)[:6]}...). Pass the "
            "reference's dual_net checkpoint prefix (model.ckpt-N) and the --config whose "
            "trunk_layers match it.")
    out = {}
    for ours, tf_name in names.items():
        value = np.asarray(get(tf_name), np.float32)
        if input_layout == "nchw" and ours in ("params/policy_fc/kernel",
                                               "params/value_fc/kernel"):
            value = _chw_to_hwc(value, board_size)
        need = tuple(wanted[ours].shape)
        if tuple(value.shape) != need:
            hint = ""
            if ours == "params/stem/kernel" and value.ndim == 4 and value.shape[2] != need[2]:
                hint = (f" The model reads {value.shape[2]} input planes, this workload feeds "
                        f"{need[2]} (pgx's AlphaGo Zero features; the v0.7 runs' mlperf07 "
                        "features have 13): such a target cannot be played here.")
            raise UsageError(
                f"minigo convert: {source}'s {tf_name} has shape {tuple(value.shape)}, this "
                f"config's {ours} needs {need} (board size, conv_width, fc_width).{hint}")
        out[ours] = value
    return out


def convert_checkpoint(prefix: str, out_path: str, config_name: str = "full",
                       input_layout: str = "nhwc") -> None:
    """Read the TF checkpoint `prefix`, convert it for `config_name`'s network, write the .npz."""
    import tensorflow as tf  # the `tfds` extra; only the converter needs it

    try:
        reader = tf.train.load_checkpoint(prefix)
    except (ValueError, tf.errors.OpError) as e:
        raise UsageError(
            f"minigo convert: {prefix!r} is not a TensorFlow checkpoint prefix "
            f"({type(e).__name__}). Pass e.g. work_dir/model.ckpt-9383 (the files "
            ".index and .data-00000-of-00001 beside it).") from e
    cfg = config_lib.load("minigo", config_name)
    workload = registry.create(cfg)
    like = jax.eval_shape(workload.init_variables, jax.random.PRNGKey(0))
    arrays = convert(reader.get_tensor, reader.get_variable_to_shape_map(), like,
                     int(cfg.model.trunk_layers), int(cfg.data.board_size), input_layout,
                     source=prefix)
    np.savez(out_path, **arrays)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("out")
    parser.add_argument("--config", default="full")
    parser.add_argument("--input_layout", default="nhwc", choices=("nhwc", "nchw"))
    args = parser.parse_args(argv)
    try:
        convert_checkpoint(args.checkpoint, args.out, args.config, args.input_layout)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    print(f"wrote {args.out}; use it with --config.eval.target_file={args.out}")
    return 0


__all__ = ["convert", "convert_checkpoint", "reference_names"]

if __name__ == "__main__":
    sys.exit(main())
