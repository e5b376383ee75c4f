"""Cross-lingual extractive questions built from Multi30k (EN-DE Flickr30k captions).

Each record is a SQuAD v1.1 question (id, question, context, answers, answer_starts):
  * context: `captions` English captions of the split, one after another (one of them the
    answer, at a position drawn uniformly; the others drawn at random from the same split);
  * question: the German translation of one of them (Multi30k's aligned German line);
  * answer: that English caption, the whole sentence as it appears in the context.
(Records also carry `candidates` and `target`, for the baselines only.)
No string rule finds the answer: the question shares almost no words with its caption (names,
numbers, a few cognates); the model must learn which German words go with which English ones
from the training questions. Train questions come from Multi30k's `train` split (29,000 pairs),
eval questions from `test_2016_flickr` (1,000 pairs; every test sentence asked once in the
default eval set), both drawn with fixed seeds; the text is the Transformer mini's
(`tpubench/datasets/translation.read_multi30k`).
"""

from __future__ import annotations

import collections
import functools
import pathlib

import numpy as np

from tpubench.datasets import translation as mt

SPLITS = {"train": "train", "eval": "test"}  # question split -> Multi30k split


@functools.lru_cache(maxsize=4)
def pairs(data_dir: str, split: str) -> tuple[tuple[str, str], ...]:
    """(English, German) caption pairs of a question split ("train" or "eval")."""
    en = mt.read_multi30k(data_dir, SPLITS[split], "en")
    de = mt.read_multi30k(data_dir, SPLITS[split], "de")
    return tuple((" ".join(e.split()), " ".join(d.split())) for e, d in zip(en, de, strict=True))


def records(data_dir: str, split: str, count: int, seed: int, captions: int) -> list[dict]:
    """`count` questions: the split's sentences in a seeded order (again, reshuffled, once all
    have been asked), each with `captions - 1` distinct other captions of the split."""
    data = pairs(data_dir, split)
    rng = np.random.default_rng(seed)
    out: list[dict] = []
    while len(out) < count:
        for i in rng.permutation(len(data)):
            others = rng.choice(len(data) - 1, captions - 1, replace=False)
            others = [int(j) + (j >= i) for j in others]  # skip the asked sentence itself
            target = int(rng.integers(captions))
            chosen = others[:target] + [int(i)] + others[target:]
            texts = [data[j][0] for j in chosen]
            start = sum(len(t) + 1 for t in texts[:target])
            context = " ".join(texts)
            assert context[start:start + len(texts[target])] == texts[target]
            out.append({"id": f"{split}-{len(out)}", "question": data[i][1], "context": context,
                        "answers": [texts[target]], "answer_starts": [start],
                        "candidates": texts, "target": target})
            if len(out) == count:
                break
    return out


def vocab(data_dir: str, pretraining_size: int, size: int) -> tuple[str, ...]:
    """The WordPiece vocabulary: the BERT mini's (ids 0..pretraining_size-1, so its embedding
    rows carry over), then the commonest basic tokens (lower-cased) of the training captions,
    English and German, it lacks (ties alphabetical), up to `size`."""
    from workloads.bert import shakespeare, squad

    base = shakespeare.ShakespeareCorpus(pretraining_size).vocab
    basic = squad.basic_tokenizer()
    counts: collections.Counter = collections.Counter()
    for en, de in pairs(data_dir, "train"):
        counts.update(basic(en))
        counts.update(basic(de))
    known = set(base)
    ranked = sorted((w for w in counts if w not in known), key=lambda w: (-counts[w], w))
    return base + tuple(ranked[:max(size - len(base), 0)])


def write_vocab(path: pathlib.Path, data_dir: str, pretraining_size: int,
                size: int) -> pathlib.Path:
    """`vocab(...)` as a vocab.txt (one token a line), written once."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join(vocab(data_dir, pretraining_size, size)) + "\n")
        tmp.replace(path)
    return path
