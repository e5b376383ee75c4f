"""Effective (non-padding) tokens/s with and without sequence packing (issue 17.4).

    python benchmarks/packing.py [--steps=12] [--bert_records=DIR]

Transformer: the mini config on its real data (Multi30k de-en, prepared into a scratch cache
both ways: `data.packing` True, several pairs per 64-token row; False, one pair per row). BERT:
rows of `--bert_seq` tokens for a 2-layer, 128-wide BERT, unpacked vs packed (`packing.py`, 3
per row) from the MLPerf-layout records in `--bert_records` (their `part-*` files) or, without
it, from made examples whose lengths are uniform on [seq/4, seq] (a stated distribution, not
Wikipedia's: the figure for real data comes from running this on the real records).

Each variant runs the workload's own loss and optimizer in one jitted step on batches of its
rows; the step time is the median of `--steps` timed steps (after a compile and a warm step),
the two variants interleaved step by step so machine load hits both alike. Non-padding tokens
per step are counted from the batches themselves. Prints one JSON line per workload: tokens per
step, median step time, tokens/s and the ratio packed / unpacked.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from absl import app, flags  # noqa: E402
from flax import linen as nn  # noqa: E402

from tpubench import config as config_lib  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("steps", 12, "Timed steps per variant (median reported).")
flags.DEFINE_string("bert_records", "", "Folder of MLPerf BERT part-* records (optional).")
flags.DEFINE_integer("bert_seq", 128, "BERT row length for the made examples.")
flags.DEFINE_integer("bert_batch", 32, "BERT rows per step.")


def _stepper(w):
    """A jitted train step of workload `w` (its loss and optimizer) and its initial state."""
    params, _ = jax.jit(lambda r: nn.meta.unbox(w.init(r)))(jax.random.PRNGKey(0))
    opt = w.optimizer()

    @jax.jit
    def step(params, opt_state, batch, rng):
        grads, _ = jax.grad(w.loss, has_aux=True)(params, {}, batch, rng)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return step, [params, opt.init(params)]


def _race(variants: dict, steps: int) -> dict:
    """Median step seconds of each variant {name: (workload, batches)}, interleaved."""
    runners = {k: _stepper(w) for k, (w, _) in variants.items()}
    times: dict[str, list[float]] = {k: [] for k in variants}
    for i in range(steps + 2):  # compile, warm, then timed
        for k, (_, batches) in variants.items():
            step, state = runners[k]
            batch = batches[i % len(batches)]
            t0 = time.perf_counter()
            state[:] = step(*state, batch, jax.random.PRNGKey(i))
            jax.block_until_ready(state)
            if i >= 2:
                times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _report(name: str, variants: dict, tokens: dict, steps: int) -> None:
    median = _race(variants, steps)
    out = {"workload": name, "steps_timed": steps}
    for k in variants:
        out[k] = {"tokens_per_step": tokens[k], "median_step_s": round(median[k], 4),
                  "tokens_per_s": round(tokens[k] / median[k], 1)}
    out["ratio_packed_over_unpacked"] = round(
        out["packed"]["tokens_per_s"] / out["unpacked"]["tokens_per_s"], 3)
    out["load_average"] = os.getloadavg()[0]
    print(json.dumps(out), flush=True)


def transformer(steps: int) -> None:
    from tpubench.datasets import prepared_text as prepared
    from tpubench.datasets import translation as ip
    from workloads.transformer.workload import TransformerWorkload

    cache = tempfile.mkdtemp(prefix="packing_bench_")
    variants, tokens = {}, {}
    for name, packing in (("packed", True), ("unpacked", False)):
        c = config_lib.load("transformer", "mini", {"data.cache_dir": cache,
                                                    "data.packing": packing})
        w = TransformerWorkload(c)
        w.prepare()
        sources, targets, rows = prepared.load_train(c)
        pairs = ip.Pairs(sources, targets, [])
        gbs = c.data.global_batch_size
        order = np.random.default_rng(0).permutation(len(rows))
        batches = [ip.build_packed(pairs, [rows[i].tolist() for i in order[b * gbs:(b + 1) * gbs]],
                                   c.data.max_len) for b in range(8)]
        tokens[name] = float(np.mean([(b["inputs"] > 0).sum() + (b["targets"] > 0).sum()
                                      for b in batches]))
        variants[name] = (w, batches)
    _report("transformer:mini (Multi30k de-en, 64 rows x 64 tokens)", variants, tokens, steps)


def _made_bert_examples(n: int, seq: int, preds: int, vocab: int) -> dict[str, np.ndarray]:
    """MLPerf-layout examples with lengths uniform on [seq/4, seq], 15% of tokens predicted."""
    rng = np.random.default_rng(0)
    out = {k: np.zeros((n, seq), np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    out.update({k: np.zeros((n, preds), np.int32) for k in ("masked_lm_positions",
                                                            "masked_lm_ids")})
    out["masked_lm_weights"] = np.zeros((n, preds), np.float32)
    out["next_sentence_labels"] = rng.integers(0, 2, n).astype(np.int32)
    for i in range(n):
        t = int(rng.integers(seq // 4, seq + 1))
        p = min(preds, max(1, round(0.15 * t)))
        out["input_ids"][i, :t] = rng.integers(5, vocab, t)
        out["input_mask"][i, :t] = 1
        out["segment_ids"][i, t // 2:t] = 1
        out["masked_lm_positions"][i, :p] = np.sort(rng.choice(np.arange(1, t), p, replace=False))
        out["masked_lm_ids"][i, :p] = rng.integers(5, vocab, p)
        out["masked_lm_weights"][i, :p] = 1.0
    return out


def bert(steps: int, records: str, seq: int, batch: int) -> None:
    from workloads.bert import input_pipeline, packing
    from workloads.bert.workload import BertWorkload

    preds = max(1, round(0.15 * seq))
    if records:
        files = input_pipeline.record_files(records, "part-*")[:4]
        examples = input_pipeline.read_tfrecords(files, seq, preds)
        source = f"the records in {records} (first {len(files)} part files)"
    else:
        examples = _made_bert_examples(batch * 24, seq, preds, 2048)
        source = "made examples, lengths uniform on [seq/4, seq]"
    packed = packing.pack(examples, preds, max_per_row=3)
    variants, tokens = {}, {}
    for name, rows in (("unpacked", examples), ("packed", packed)):
        c = config_lib.load("bert", "mini", {
            "data.max_seq_length": seq, "data.max_predictions_per_seq": preds,
            "model.max_position_embeddings": seq, "model.vocab_size": 2048,
            "data.global_batch_size": batch, "data.packed": name == "packed",
            "model.hidden_dropout_prob": 0.0, "model.attention_probs_dropout_prob": 0.0})
        n = len(rows["input_ids"]) // batch
        batches = [{k: v[b * batch:(b + 1) * batch] for k, v in rows.items()}
                   for b in range(min(n, 8))]
        tokens[name] = float(np.mean([(b["input_mask"] > 0).sum() for b in batches]))
        variants[name] = (BertWorkload(c), batches)
    stats = packing.stats(examples, packed)
    print(json.dumps({"bert_packing": {k: round(v, 4) for k, v in stats.items()},
                      "source": source}), flush=True)
    _report(f"bert (2 layers x 128, seq {seq}, {batch} rows)", variants, tokens, steps)


def main(argv: list[str]) -> None:
    del argv
    transformer(FLAGS.steps)
    bert(FLAGS.steps, FLAGS.bert_records, FLAGS.bert_seq, FLAGS.bert_batch)


if __name__ == "__main__":
    app.run(main)
