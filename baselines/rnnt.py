"""Trivial baselines for the RNN-T mini (FSDD digit strings, held-out speaker), on its own eval.

    python baselines/rnnt.py --data_dir=DIR   # DIR holds fsdd/recordings

Prints the corpus WER (jiwer) of: the empty transcript; the most frequent transcript of 20,000
training draws; and the best constant guess "w w ... w" (every digit word w, 1 to 4 copies).
The mini's target sits below the best of them (WER: lower is better).
"""

from __future__ import annotations

import argparse
import collections

import numpy as np

from tpubench import config as config_lib
from workloads.rnnt import input_pipeline, text


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data_dir", required=True)
    args = p.parse_args()
    cfg = config_lib.load("rnnt", "mini", {"data.dir": args.data_dir})
    refs = input_pipeline.transcripts(cfg)
    d = cfg.data
    rng = np.random.default_rng(0)
    draws = collections.Counter(
        " ".join(input_pipeline.WORDS[i] for i in rng.integers(0, 10, rng.integers(
            d.digits_min, d.digits_max + 1))) for _ in range(20_000))
    results = {"empty": text.word_error_rate([""] * len(refs), refs)}
    top = draws.most_common(1)[0][0]
    results[f"most frequent train transcript ({top!r})"] = text.word_error_rate(
        [top] * len(refs), refs)
    best = min((text.word_error_rate([" ".join([w] * k)] * len(refs), refs), w, k)
                for w in input_pipeline.WORDS for k in range(1, d.digits_max + 1))
    results[f"best constant ({' '.join([best[1]] * best[2])!r})"] = best[0]
    for name, wer in results.items():
        print(f"{name}: WER {wer:.4f}")


if __name__ == "__main__":
    main()
