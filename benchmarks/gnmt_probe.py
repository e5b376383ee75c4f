"""Debugging probe for the GNMT mini: a plain training loop (no harness) on the mini's data
with config overrides, printing train loss per token, how peaked the attention is and BLEU
(the workload's beam search) on the first test2016 sentences, or on the training pairs
themselves with --overfit=N (can the model memorize N pairs?).

    python benchmarks/gnmt_probe.py --data_dir=../shared/data --cache_dir=/tmp/gnmt_cache \\
        --steps=150 --every=75 --n_eval=500 -o model.init_weight=0.3 -o model.attention_scale=1.0

The figures in workloads/gnmt/configs/mini.py's docstring ("probe") come from this script.
"""

from __future__ import annotations

import itertools
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import app, flags
from flax import linen as nn

from tpubench import config as config_lib
from tpubench.text.translation import corpus_bleu
from workloads.gnmt import model as model_lib
from workloads.gnmt.workload import GNMTWorkload

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", "../shared/data", "folder holding multi30k/")
flags.DEFINE_string("cache_dir", "/tmp/gnmt_probe_cache", "prepared data")
flags.DEFINE_multi_string("o", [], "config overrides KEY=PYTHON_VALUE")
flags.DEFINE_integer("steps", 300, "optimizer steps")
flags.DEFINE_integer("every", 100, "eval every this many steps")
flags.DEFINE_integer("overfit", 0, "train on the first N training pairs only, eval on them")
flags.DEFINE_integer("n_eval", 1000, "test2016 sentences to score")


def _pad(rows: list[np.ndarray], width: int) -> np.ndarray:
    out = np.zeros((len(rows), width), np.int32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def main(_):
    c = config_lib.load("gnmt", "mini")
    overrides = {"data.dir": FLAGS.data_dir, "data.cache_dir": FLAGS.cache_dir}
    for kv in FLAGS.o:
        k, v = kv.split("=", 1)
        overrides[k] = eval(v)  # noqa: S307 (a developer's command line)
    config_lib.apply_overrides(c, overrides)
    w = GNMTWorkload(c)
    w.prepare()
    w.check_data()
    params = nn.meta.unbox(w.init(jax.random.PRNGKey(c.run.seed))[0])
    tx = w.optimizer()
    opt = tx.init(params)

    @jax.jit
    def step(params, opt, batch, rng):
        (_, (_, m)), g = jax.value_and_grad(w.loss, has_aux=True)(params, {}, batch, rng)
        u, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, u), opt, m["loss_per_token"], optax.global_norm(g)

    @jax.jit
    def peak_attention(params, batch):
        """Mean over real target tokens of the largest attention weight (1/len: uniform)."""
        m = w.model()
        v = {"params": params}
        enc = m.apply(v, batch["inputs"], method=model_lib.GNMT.encode)
        keys = m.apply(v, enc, method=model_lib.GNMT.attention_keys)
        _, att, _ = m.apply(v, model_lib.shift_right(batch["targets"]), enc, keys,
                            batch["inputs"] != 0, method=model_lib.GNMT.decode)
        real = batch["targets"] != 0
        return (att.max(-1) * real).sum() / real.sum()

    batches = w.train_batches(0, 0, 1)
    tok = w.tokenizer()
    if FLAGS.overfit:
        fixed = [next(batches) for _ in range(max(1, FLAGS.overfit // c.data.global_batch_size))]
        batches = itertools.cycle(fixed)
        eval_src = np.concatenate([b["inputs"] for b in fixed])
        refs = tok.decode(np.concatenate([b["targets"] for b in fixed]))
    else:
        sources, all_refs = w.eval_data()
        eval_src = _pad(sources[:FLAGS.n_eval], w.eval_input_len)
        refs = all_refs[:FLAGS.n_eval]
    translate = jax.jit(w.translate)
    t0 = time.time()
    for s in range(1, FLAGS.steps + 1):
        batch = next(batches)
        params, opt, loss, gnorm = step(params, opt, batch, jax.random.PRNGKey(s))
        if s % 25 == 0:
            print(f"step {s} loss/token {float(loss):.3f} grad norm {float(gnorm):.1f} "
                  f"lr {float(w.learning_rate(s)):.2e} {time.time() - t0:.0f} s", flush=True)
        if s % FLAGS.every == 0:
            out = [np.asarray(translate(params, jnp.asarray(eval_src[i:i + 500])))
                   for i in range(0, len(eval_src), 500)]
            hyps = tok.decode(np.concatenate(out))
            peak = float(peak_attention(params, jax.tree.map(jnp.asarray, batch)))
            print(f"EVAL step {s} BLEU {100 * corpus_bleu(hyps, refs):.2f} peak attention "
                  f"{peak:.3f} g {float(params['attention']['g']):.3f} e.g. {hyps[:2]}",
                  flush=True)


if __name__ == "__main__":
    app.run(main)
