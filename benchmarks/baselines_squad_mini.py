"""Baselines of the Shakespeare SQuAD-style questions (`workloads/bert/shakespeare_qa.py`),
scored by the official SQuAD v1.1 F1 / EM (`workloads/bert/squad_eval.py`) on held-out plays.

    python benchmarks/baselines_squad_mini.py [--count=1000] [--seed=1] [--without-quote]

Answers that do not read the question: the first speaker of the context, the last one, the
most frequent one (ties: the earliest); and one that does: the speaker of the speech sharing
the most words with the question (word overlap, lower-cased; ties: the earliest speech), and
the speaker of the longest speech (characters; ties: the earliest). `--without-quote` cuts the
quoted line out of the context (`shakespeare_qa.records(..., quote_in_context=False)`).
"""

from __future__ import annotations

import argparse
import collections
import re

from workloads.bert import shakespeare_qa, squad_eval

_WORD = re.compile(r"[a-z']+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def overlap_speaker(r: dict) -> str:
    """The speaker whose speech shares the most (multiset) words with the question."""
    q = collections.Counter(_words(r["question"]))
    scores = [sum((q & collections.Counter(_words(s))).values()) for s in r["speeches"]]
    return r["speakers"][scores.index(max(scores))]


BASELINES = {
    "first speaker": lambda r: r["speakers"][0],
    "last speaker": lambda r: r["speakers"][-1],
    "most frequent speaker": lambda r: collections.Counter(r["speakers"]).most_common(1)[0][0],
    "word-overlap speaker": overlap_speaker,
    "longest-speech speaker": lambda r: r["speakers"][
        max(range(len(r["speeches"])), key=lambda i: (len(r["speeches"][i]), -i))],
}


def scores(records: list[dict]) -> dict[str, dict[str, float]]:
    """{baseline: {"exact_match", "f1"}} on the records."""
    truths = [(r["id"], r["answers"]) for r in records]
    return {name: squad_eval.evaluate(truths, {r["id"]: f(r) for r in records})
            for name, f in BASELINES.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--without-quote", action="store_true")
    args = parser.parse_args()
    records = shakespeare_qa.records("eval", args.count, args.seed,
                                     quote_in_context=not args.without_quote)
    print(f"{len(records)} held-out questions (seed {args.seed}, quote in context: "
          f"{not args.without_quote})")
    for name, s in scores(records).items():
        print(f"  {name:<24} F1 {s['f1']:.2f}  EM {s['exact_match']:.2f}")


if __name__ == "__main__":
    main()
