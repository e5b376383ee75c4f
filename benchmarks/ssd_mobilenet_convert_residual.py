"""Where the ssd-mobilenet converter test's float32 residual comes from (issue 11).

tests/test_ssd_mobilenet_convert.py compares the converted Flax model with an independent
TF-layout forward on made constants. This script runs both forwards in float32 and float64
(jax x64) on that test's constants, with the kernels at the test's He scale (std
sqrt(2 / fan-in)) or at a fixed std (`--kernel-std 0.5`: the test's first made weights), and
prints
- per map, the largest |difference| / the map's largest |value| between: our model and the
  reference in float32; the float32 reference and the float64 one; our model and the
  reference in float64, with the folded variance 1 - 1e-3 as the converter stores it
  (float32) and exact;
- per conv of the reference (heads last), its pre-activation's largest |value|, std, the share
  of units in ReLU6's linear range (0, 6), and its float32 error against float64 / that value.

    JAX_PLATFORMS=cpu PYTHONPATH=. python benchmarks/ssd_mobilenet_convert_residual.py \
        [--kernel-std he|0.5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from flax import linen as nn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import test_ssd_mobilenet_convert as t  # noqa: E402


def constants(w, kernel_std: str) -> dict[str, np.ndarray]:
    """The test's made constants; with a number, every kernel rescaled to that std (the same
    random draws: numpy's normal is scale * a standard normal)."""
    c = t._made_constants(w)
    if kernel_std == "he":
        return c
    for k, v in c.items():
        if v.ndim == 4:
            fan_in = v.shape[0] * v.shape[1] * (1 if "depthwise" in k else v.shape[2])
            c[k] = (v / np.sqrt(2 / fan_in) * float(kernel_std)).astype(np.float32)
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel-std", default="he", help="'he' (the test's) or a number")
    args = ap.parse_args()
    w = t._workload()
    consts = constants(w, args.kernel_std)
    x = np.random.default_rng(1).uniform(-1, 1, (2, 64, 64, 1))  # the test's image
    with tempfile.TemporaryDirectory() as d:
        np.savez(os.path.join(d, "c.npz"), **consts)
        loaded = t._workload(**{"model.checkpoint": os.path.join(d, "c.npz")})
        params, state = (nn.unbox(v) for v in jax.jit(loaded.init)(jax.random.key(0)))

    def reference(dt, taps=None):
        c = {k: v.astype(dt) for k, v in consts.items()}
        return [(np.asarray(a), np.asarray(b))
                for a, b in t._reference_forward(c, x.astype(dt), w, taps)]

    def ours(dt, exact_var=False):
        v = jax.tree.map(lambda a: jnp.asarray(a, dt), {"params": params, **state})
        if exact_var:  # 1 - 1e-3 in float64, not float32's nearest value
            v["batch_stats"] = jax.tree_util.tree_map_with_path(
                lambda p, a: jnp.full(a.shape, 1 - 1e-3, dt)
                if jax.tree_util.keystr(p).endswith("['var']") else a, v["batch_stats"])
        offsets, logits = loaded.model().clone(dtype=jnp.dtype(dt)).apply(
            v, x.astype(dt), train=False)  # the model casts its outputs to float32
        return t._ours_per_map(np.asarray(offsets), np.asarray(logits), loaded)

    taps32, taps64 = [], []
    r32, r64 = reference(np.float32, taps32), reference(np.float64, taps64)
    rows = {"ours f32 - ref f32": (ours(np.float32), r32), "ref f32 - ref f64": (r32, r64),
            "ours f64 - ref f64, variance f32": (ours(np.float64), r64),
            "ours f64 - ref f64, variance exact": (ours(np.float64, exact_var=True), r64)}
    print(f"kernels: std {args.kernel_std}; per map: max |difference| / max |value|"
          " (loc and logits together)")
    for name, (a, b) in rows.items():
        cells = []
        for (a_loc, a_cls), (b_loc, b_cls) in zip(a, b, strict=True):
            diff = max(np.abs(a_loc - b_loc).max(), np.abs(a_cls - b_cls).max())
            scale = max(np.abs(b_loc).max(), np.abs(b_cls).max())
            cells.append(f"{diff:.2e}/{scale:.3g}={diff / scale:.1e}")
        print(f"  {name:36s}", "  ".join(cells))
    print("reference convs (heads last): max|pre-activation|, std, share in (0, 6), "
          "float32 error / max|pre-activation|")
    for i, (a, b) in enumerate(zip(taps32, taps64, strict=True)):
        a, b = np.asarray(a, np.float64), np.asarray(b)
        scale = np.abs(b).max()
        print(f"  {i:3d} {scale:8.3g} {b.std():8.3g} {((b > 0) & (b < 6)).mean():6.3f} "
              f"{np.abs(a - b).max() / scale:9.2e}")


if __name__ == "__main__":
    main()
