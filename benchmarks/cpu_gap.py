"""The CPU gap (issue 17.5): ResNet-50 v1.5 train steps on this CPU, side by side in one run.

Variants, each in its own worker process (XLA flags are per process), stepped in turn, round
after round, so that the machine's load hits all of them alike:
- `bare`: a plain Flax ResNet-50 (the flax examples' shape: `nn.Conv`, `nn.BatchNorm`, SGD with
  momentum, softmax cross-entropy) in a hand-written `jax.jit` step with the state donated;
- `tpubench`: the harness's own compiled train step for `resnet --config=full` in float32
  (synthetic data made on device, `JitEngine.compile`, K=1), as `resnet_throughput.py` runs it,
  with its default `model.conv_impl=auto` (1x1 convolutions as matmuls on CPU:
  tpubench/nn/convolution.py); `tpubench_xla`: the same with `model.conv_impl=xla` (every
  convolution a lax convolution, as before issue 17.5);
- `torch`: PyTorch eager, channels-last (`torch_resnet50.py`, run with `--torch_python`).
Each JAX variant may run under several XLA flag sets (`--flags=default,onednn`): `onednn` is
`--xla_cpu_use_onednn=true`, XLA:CPU's oneDNN convolutions and matmuls.

    JAX_PLATFORMS=cpu python benchmarks/cpu_gap.py --batch=32 --rounds=3 \\
        --variants=bare,tpubench --flags=default,onednn --torch_python=/tmp/tv/bin/python

Prints each variant's init + compile time, median step time and images/s, and ratios to
`bare` under default flags. Figures: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial

import step_worker

HERE = os.path.dirname(os.path.abspath(__file__))
FLAG_SETS = {"default": "", "onednn": "--xla_cpu_use_onednn=true"}


# ---- workers -----------------------------------------------------------------------------------

def _bare_step(batch: int, image: int):
    """A plain Flax ResNet-50 train step, compiled; returns (step() -> loss, compile seconds)."""
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn

    class Block(nn.Module):
        filters: int
        strides: int

        @nn.compact
        def __call__(self, x):
            conv = partial(nn.Conv, use_bias=False)
            norm = partial(nn.BatchNorm, use_running_average=False, momentum=0.9, epsilon=1e-5)
            y = nn.relu(norm()(conv(self.filters, (1, 1))(x)))
            y = nn.relu(norm()(conv(self.filters, (3, 3), self.strides)(y)))
            y = norm(scale_init=nn.initializers.zeros)(conv(self.filters * 4, (1, 1))(y))
            if x.shape != y.shape:
                x = norm()(conv(self.filters * 4, (1, 1), self.strides)(x))
            return nn.relu(x + y)

    class ResNet50(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(64, (7, 7), (2, 2), padding=[(3, 3)] * 2, use_bias=False)(x)
            x = nn.relu(nn.BatchNorm(use_running_average=False, momentum=0.9)(x))
            x = nn.max_pool(x, (3, 3), (2, 2), padding="SAME")
            for i, blocks in enumerate((3, 4, 6, 3)):
                for j in range(blocks):
                    x = Block(64 * 2**i, 2 if i > 0 and j == 0 else 1)(x)
            return nn.Dense(1000)(jnp.mean(x, axis=(1, 2)))

    model, tx = ResNet50(), optax.sgd(0.1, momentum=0.9)
    x = jax.random.normal(jax.random.PRNGKey(1), (batch, image, image, 3))
    y = jax.random.randint(jax.random.PRNGKey(2), (batch,), 0, 1000)
    t = time.perf_counter()
    variables = jax.jit(model.init)(jax.random.PRNGKey(0), x)
    params, stats = variables["params"], variables["batch_stats"]
    state = (params, stats, tx.init(params))

    def train_step(state, x, y):
        params, stats, opt_state = state

        def loss_fn(p):
            logits, new = model.apply({"params": p, "batch_stats": stats}, x,
                                      mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), new

        (loss, new), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), new["batch_stats"], opt_state), loss

    compiled = jax.jit(train_step, donate_argnums=0).lower(state, x, y).compile()
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - t
    box = {"state": state}

    def step():
        box["state"], loss = compiled(box["state"], x, y)
        return float(loss)  # blocks

    return step, {"init_compile_s": compile_s}


def _tpubench_step(batch: int, image: int, conv_impl: str = "auto"):
    """The harness's compiled train step (K=1, synthetic) for `resnet --config=full` in float32
    (the full config computes in bfloat16), with `model.conv_impl`."""
    import jax

    from tpubench import config as config_lib
    from tpubench import mesh as mesh_lib
    from tpubench import registry
    from tpubench.loops import engine

    cfg = config_lib.load("resnet", "full", {
        "data.source": "synthetic", "run.steps_per_dispatch": 1, "data.global_batch_size": batch,
        "eval.batch_size": batch, "data.image_size": image, "model.dtype": "float32",
        "model.conv_impl": conv_impl})
    w = registry.create(cfg)
    t = time.perf_counter()
    eng = engine.JitEngine(w, mesh_lib.build_mesh(cfg))
    compiled = eng.compile(1, synthetic=True)
    box = {"state": eng.init_state(cfg.run.seed)}
    jax.block_until_ready(box["state"])
    init_s = time.perf_counter() - t

    def step():
        box["state"], m = compiled.train(box["state"])
        return float(m["last_loss"])  # blocks

    return step, {"init_compile_s": init_s}


def worker(kind: str, batch: int, image: int) -> None:
    """Build the step, say ready, then run N steps per stdin line, one JSON line back each."""
    builders = {"bare": _bare_step, "tpubench": _tpubench_step,
                "tpubench_xla": partial(_tpubench_step, conv_impl="xla")}
    step, info = builders[kind](batch, image)
    step()  # first run (allocations), not timed
    step_worker.serve(step, info)


# ---- coordinator -------------------------------------------------------------------------------

class Worker:
    def __init__(self, name: str, argv: list[str], env: dict[str, str]):
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, cwd=os.path.dirname(HERE))
        self.info = self._read()
        self.times: list[float] = []
        self.loss = None

    def _read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"worker {self.name} exited (rc {self.proc.wait()})")
            if line.startswith("{"):
                return json.loads(line)

    def run(self, steps: int) -> None:
        self.proc.stdin.write(f"{steps}\n")
        self.proc.stdin.flush()
        out = self._read()
        self.times += out["times"]
        self.loss = out["loss"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=1, help="steps per variant per round")
    p.add_argument("--variants", default="bare,tpubench")
    p.add_argument("--flags", default="default,onednn", help=f"of {sorted(FLAG_SETS)}")
    p.add_argument("--torch_python", default="", help="a Python with torch: adds `torch`")
    p.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.batch, args.image)
    specs = [(v, f) for v in args.variants.split(",") for f in args.flags.split(",")]
    for _, f in specs:
        if f not in FLAG_SETS:
            raise SystemExit(f"--flags: unknown {f!r}; choose from {sorted(FLAG_SETS)}")
    workers = []
    for v, f in specs:  # started one at a time: compiles do not overlap
        env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " "
                                          + FLAG_SETS[f]).strip(), JAX_PLATFORMS="cpu")
        argv = [sys.executable, os.path.join(HERE, "cpu_gap.py"), f"--worker={v}",
                f"--batch={args.batch}", f"--image={args.image}"]
        workers.append(Worker(f"{v}/{f}", argv, env))
        print(f"{workers[-1].name}: init + compile {workers[-1].info['init_compile_s']:.1f} s",
              flush=True)
    if args.torch_python:
        argv = [args.torch_python, os.path.join(HERE, "torch_resnet50.py"),
                f"--batch={args.batch}", f"--image={args.image}"]
        workers.append(Worker("torch/eager", argv, dict(os.environ)))
        print(f"torch: {workers[-1].info}", flush=True)
    for r in range(args.rounds):
        order = workers[r % len(workers):] + workers[:r % len(workers)]
        for w in order:
            w.run(args.steps)
        print(f"round {r + 1}: " + ", ".join(f"{w.name} {w.times[-1]:.2f} s" for w in workers),
              flush=True)
    for w in workers:
        w.close()
    base = statistics.median(workers[0].times)
    print(f"\nResNet-50 v1.5 train step, batch {args.batch}, {args.image}x{args.image}, float32, "
          f"{os.cpu_count()} CPUs; medians of {args.rounds * args.steps} steps, interleaved")
    print("| variant | init + compile s | step s (median) | images/s | speed vs first |")
    print("|---|---|---|---|---|")
    for w in workers:
        med = statistics.median(w.times)
        print(f"| {w.name} | {w.info['init_compile_s']:.1f} | {med:.2f} | "
              f"{args.batch / med:.2f} | {base / med:.2f} |")


if __name__ == "__main__":
    main()
