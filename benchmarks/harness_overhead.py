"""Harness overhead: the ResNet mini's train steps through tpubench vs a minimal jitted loop.

Both train the same model with the same optimizer on the same MNIST-5k batches from host memory.
tpubench: `train_and_evaluate` (blocks of K steps under lax.scan, prefetch thread, metrics one
block late, evals excluded via its train_s). Hand-written: `jax.jit(step)` called once per
batch, one block_until_ready at the end. Runs alternate; we report the median of each and the
ratio of medians (> 1 means tpubench is faster).

    JAX_PLATFORMS=cpu python benchmarks/harness_overhead.py [--repeats=3] [--epochs=6]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import jax
import optax
from absl import logging

from tpubench import config as config_lib
from tpubench import registry
from tpubench.loops import supervised as train
from workloads.resnet import input_pipeline


def tpubench_examples_per_s(epochs: int) -> float:
    cfg = config_lib.load("resnet", "mini", {"eval.target_value": 1.1})  # never stops early
    cfg.run.max_train_samples = epochs * cfg.eval.every_samples
    with tempfile.TemporaryDirectory() as d:
        s = train.train_and_evaluate(cfg, d)
    return s["train_examples_per_s"]


def hand_loop_examples_per_s(epochs: int) -> float:
    cfg = config_lib.load("resnet", "mini")
    w = registry.create(cfg)
    tx = w.optimizer()
    params, model_state = w.init(jax.random.PRNGKey(0))
    params = jax.tree.map(lambda x: getattr(x, "value", x), params,
                          is_leaf=lambda x: hasattr(x, "value"))
    opt_state = tx.init(params)

    @jax.jit
    def step(params, model_state, opt_state, batch, rng):
        (loss, (ms, _)), grads = jax.value_and_grad(w.loss, has_aux=True)(
            params, model_state, batch, rng)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), ms, opt_state, loss

    n_steps = epochs * cfg.eval.every_samples // cfg.data.global_batch_size
    it = input_pipeline.mnist5k_train(cfg, 0, 0, 1)
    batches = [next(it) for _ in range(n_steps)]
    rng = jax.random.PRNGKey(1)
    step(params, model_state, opt_state, batches[0], rng)[3].block_until_ready()  # compile
    t = time.perf_counter()
    for b in batches:
        params, model_state, opt_state, loss = step(params, model_state, opt_state, b, rng)
    loss.block_until_ready()
    return n_steps * cfg.data.global_batch_size / (time.perf_counter() - t)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epochs", type=int, default=6)
    args = p.parse_args()
    logging.set_verbosity(logging.ERROR)
    ours, hand = [], []
    for _ in range(args.repeats):
        ours.append(tpubench_examples_per_s(args.epochs))
        hand.append(hand_loop_examples_per_s(args.epochs))
    mo, mh = statistics.median(ours), statistics.median(hand)
    print(f"tpubench     examples/s: {', '.join(f'{x:.0f}' for x in ours)}  median {mo:.0f}")
    print(f"hand-written examples/s: {', '.join(f'{x:.0f}' for x in hand)}  median {mh:.0f}")
    print(f"ratio tpubench / hand-written (median): {mo / mh:.3f}")


if __name__ == "__main__":
    main()
