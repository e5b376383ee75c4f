"""Simple baselines for the Transformer mini (Multi30k de -> en, test2016), scored as the mini is.

    python baselines/transformer.py --data_dir=DIR   # DIR/multi30k/*.gz

Each baseline translates the mini's own eval split (test2016, 1,000 sentences) using only the
training pairs (29,000), and is scored with the workload's metric (uncased corpus BLEU with the
reference's international tokenization, `tpubench.tasks.translation.corpus_bleu`):

* copy: the German source as the "translation" (names, numbers and shared words match);
* word-by-word: each source word replaced by the English word it co-occurs with most (Dice
  coefficient over the training pairs' word sets), unknown words copied;
* retrieval: the English side of the training pair whose German side is most similar (cosine of
  TF-IDF word uni+bigram vectors), i.e. 1-nearest-neighbour translation.

Prints one line per baseline with its BLEU; the mini config's docstring quotes them (the GNMT
mini trains and evaluates on the same split: its config quotes them too).
"""

from __future__ import annotations

import argparse
import collections
import re

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from tpubench.datasets import translation as ip
from tpubench.tasks.translation import corpus_bleu

_WORD = re.compile(r"\w+|[^\w\s]")


def words(text: str) -> list[str]:
    """Lowercased words and punctuation marks."""
    return _WORD.findall(text.lower())


def copy_source(train, test_sources):
    """The source sentence itself."""
    del train
    return list(test_sources)


def dice_lexicon(pairs, tokenize=None) -> dict[str, str]:
    """Source word -> the target word of highest Dice coefficient over the (source, target)
    pairs' word sets (ties: the alphabetically first, so the result never depends on set order).
    Also the learned baseline of `baselines/bert.py multi30k_qa`."""
    tokenize = tokenize or words
    src_count: collections.Counter = collections.Counter()
    tgt_count: collections.Counter = collections.Counter()
    pair_count: collections.Counter = collections.Counter()
    for src, tgt in pairs:
        s, t = set(tokenize(src)), set(tokenize(tgt))
        src_count.update(s)
        tgt_count.update(t)
        pair_count.update((a, b) for a in s for b in t)
    best: dict[str, tuple[float, str]] = {}
    for (a, b), n in pair_count.items():
        dice = 2 * n / (src_count[a] + tgt_count[b])
        old = best.get(a)
        if old is None or dice > old[0] or (dice == old[0] and b < old[1]):
            best[a] = (dice, b)
    return {a: b for a, (_, b) in best.items()}


def word_by_word(train, test_sources):
    """Each source word -> its best-associated target word (`dice_lexicon`); unknown words
    copied."""
    lexicon = dice_lexicon(train)
    return [" ".join(lexicon.get(w, w) for w in words(s)) for s in test_sources]


def retrieval(train, test_sources):
    """The target of the most similar training source (TF-IDF uni+bigrams, cosine)."""
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), lowercase=True, sublinear_tf=True)
    train_matrix = vectorizer.fit_transform([s for s, _ in train])
    test_matrix = vectorizer.transform(test_sources)
    nearest = np.asarray((test_matrix @ train_matrix.T).argmax(axis=1)).ravel()
    return [train[i][1] for i in nearest]


BASELINES = {"copy": copy_source, "word-by-word": word_by_word, "retrieval": retrieval}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data_dir", required=True, help="directory holding multi30k/")
    args = parser.parse_args()
    ip.check_multi30k(args.data_dir, ("de", "en"), ("train", "test"))
    train = list(zip(ip.read_multi30k(args.data_dir, "train", "de"),
                     ip.read_multi30k(args.data_dir, "train", "en"), strict=True))
    test_src = ip.read_multi30k(args.data_dir, "test", "de")
    test_ref = ip.read_multi30k(args.data_dir, "test", "en")
    for name, fn in BASELINES.items():
        hyps = fn(train, test_src)
        print(f"{name:>14}: BLEU {100 * corpus_bleu(hyps, test_ref):.2f}")


if __name__ == "__main__":
    main()
