"""One convolution, forward + backward, in the forms XLA:CPU could run it (issue 17.5): a lax
convolution against `tpubench.nn.convolution.pointwise_as_matmul` (1x1) or an im2col + matmul
(k x k), interleaved in one process, medians. Prints each form's time and its speed-up.

    JAX_PLATFORMS=cpu python benchmarks/conv_forms.py --repeats=5

Figures: benchmarks/README.md ("The CPU gap").
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
from jax import lax

from tpubench.nn.convolution import pointwise_as_matmul

NHWC = ("NHWC", "HWIO", "NHWC")
# (batch, image, kernel, C_in, C_out, stride): ResNet-50's shapes at 224x224.
SHAPES = [(32, 56, 1, 64, 256, 1), (32, 56, 1, 256, 64, 1), (32, 14, 1, 256, 1024, 1),
          (32, 56, 3, 64, 64, 1), (32, 28, 3, 128, 128, 1), (32, 14, 3, 256, 256, 1),
          (32, 7, 3, 512, 512, 1), (32, 56, 3, 128, 128, 2), (32, 224, 7, 3, 64, 2)]


def im2col(x, w, strides, padding, dimension_numbers=None):
    """A k x k NHWC/HWIO convolution as one matmul over the k*k shifted, strided slices."""
    kh, kw, ci, co = w.shape
    s = strides[0]
    x = jnp.pad(x, ((0, 0), *padding, (0, 0)))
    b, h, wd, _ = x.shape
    ho, wo = (h - kh) // s + 1, (wd - kw) // s + 1
    cols = [x[:, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s, :]
            for i in range(kh) for j in range(kw)]
    patches = jnp.concatenate(cols, -1).reshape(-1, kh * kw * ci)
    return (patches @ w.reshape(-1, co)).reshape(b, ho, wo, co)


def fwd_bwd(conv, strides, padding):
    def loss(x, w):
        return jnp.sum(jnp.square(conv(x, w, strides, padding, dimension_numbers=NHWC)))
    return jax.jit(jax.grad(loss, argnums=(0, 1)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    print("| batch, image, kernel, C_in -> C_out, stride | lax ms | other form | ms | speed-up |")
    print("|---|---|---|---|---|")
    for b, h, k, ci, co, s in SHAPES:
        kx, kw = jax.random.split(jax.random.PRNGKey(0))
        x = jax.random.normal(kx, (b, h, h, ci))
        w = jax.random.normal(kw, (k, k, ci, co)) * 0.05
        pad = lax.padtype_to_pads((h, h), (k, k), (s, s), "SAME")
        other, name = (pointwise_as_matmul, "matmul") if k == 1 else (im2col, "im2col")
        fns = {"lax": fwd_bwd(lax.conv_general_dilated, (s, s), pad),
               name: fwd_bwd(other, (s, s), pad)}
        times = {n: [] for n in fns}
        for f in fns.values():
            jax.block_until_ready(f(x, w))
        for _ in range(args.repeats):
            for n, f in fns.items():
                t = time.perf_counter()
                jax.block_until_ready(f(x, w))
                times[n].append(time.perf_counter() - t)
        a, o = statistics.median(times["lax"]), statistics.median(times[name])
        print(f"| {b}, {h}x{h}, {k}x{k}, {ci} -> {co}, {s} | {a * 1e3:.0f} | {name} | "
              f"{o * 1e3:.0f} | {a / o:.2f} |", flush=True)


if __name__ == "__main__":
    main()
