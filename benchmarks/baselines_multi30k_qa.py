"""Baselines of the cross-lingual Multi30k questions (`workloads/bert/multi30k_qa.py`), scored
by the official SQuAD v1.1 F1 / EM (`workloads/bert/squad_eval.py`) on the eval questions.

    python benchmarks/baselines_multi30k_qa.py [--captions=4] [--count=1000] [--seed=1]

Each baseline answers with one of the context's captions (the task's candidates):
  * positional: the first, the last caption; the longest, the shortest (characters);
  * length match: the caption whose length times the training set's median German/English
    character ratio is closest to the question's length (a translation keeps its length);
  * word overlap: the most lower-cased words shared with the German question (names, numbers,
    cognates, loan words); char 3-gram overlap (Jaccard of the sets of character trigrams of
    the lower-cased texts: catches cognates such as Mann/man, Gitarre/guitar);
  * length + trigrams: the trigram Jaccard minus the length rule's relative error (equal
    weights);
  * learned lexicon (NOT trivial: it learns from the 29,000 training pairs, as the model must):
    each German word replaced by the English word it co-occurs with most (Dice over the
    training pairs' word sets: `benchmarks/baselines_transformer.dice_lexicon`, ties broken
    alphabetically so the figure does not depend on the string hash seed), then word overlap
    with the translation.
Ties: the earliest caption. Prints one line per baseline; the config docstring quotes them.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys

import numpy as np

from workloads.bert import multi30k_qa, squad_eval

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling benchmark script
from baselines_transformer import dice_lexicon  # noqa: E402

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _trigrams(text: str) -> set[str]:
    t = " ".join(_words(text))
    return {t[i:i + 3] for i in range(len(t) - 2)}


def _argmax(scores) -> int:
    return int(np.argmax(np.asarray(scores, np.float64)))  # first of ties


def _overlap(a: list[str], b: list[str]) -> int:
    return sum((collections.Counter(a) & collections.Counter(b)).values())


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / max(len(a | b), 1)


def lexicon(train: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """German word -> the English word of highest Dice coefficient over the training pairs'
    word sets (ties: the alphabetically first): `baselines_transformer.dice_lexicon`."""
    return dice_lexicon(((de, en) for en, de in train), _words)


def baselines(train: tuple[tuple[str, str], ...], records: list[dict]) -> dict:
    """{name: record -> answer text}."""
    ratio = float(np.median([len(de) / len(en) for en, de in train]))

    def length_error(r, c):
        return abs(len(c) * ratio - len(r["question"])) / len(r["question"])

    words_de_en = lexicon(train)

    def pick(score):
        return lambda r: r["candidates"][_argmax([score(r, c) for c in r["candidates"]])]

    return {
        "first caption": lambda r: r["candidates"][0],
        "last caption": lambda r: r["candidates"][-1],
        "longest caption": pick(lambda r, c: len(c)),
        "shortest caption": pick(lambda r, c: -len(c)),
        "length match": pick(lambda r, c: -length_error(r, c)),
        "word overlap": pick(lambda r, c: _overlap(_words(r["question"]), _words(c))),
        "char 3-gram overlap": pick(lambda r, c: _jaccard(_trigrams(r["question"]),
                                                          _trigrams(c))),
        "length + 3-grams": pick(lambda r, c: _jaccard(_trigrams(r["question"]), _trigrams(c))
                                 - length_error(r, c)),
        "learned lexicon (Dice)": pick(lambda r, c: _overlap(
            [words_de_en.get(w, w) for w in _words(r["question"])], _words(c))),
    }


def scores(data_dir: str, records: list[dict]) -> dict[str, dict[str, float]]:
    """{baseline: {"exact_match", "f1"}} on the records."""
    truths = [(r["id"], r["answers"]) for r in records]
    train = multi30k_qa.pairs(data_dir, "train")
    return {name: squad_eval.evaluate(truths, {r["id"]: f(r) for r in records})
            for name, f in baselines(train, records).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", default=os.environ.get("TPUBENCH_DATA_DIR", ""))
    parser.add_argument("--captions", type=int, default=4)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    records = multi30k_qa.records(args.data_dir, "eval", args.count, args.seed, args.captions)
    print(f"{len(records)} eval questions, {args.captions} captions a context (seed {args.seed})")
    for name, s in scores(args.data_dir, records).items():
        print(f"  {name:<24} F1 {s['f1']:.2f}  EM {s['exact_match']:.2f}")


if __name__ == "__main__":
    main()
