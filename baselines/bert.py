"""The BERT minis' simple baselines, one subcommand per mini's task:

    mlm          the BERT mini (masked words of Shakespeare; configs mini, mini_seq64, ...)
    squad        the Shakespeare SQuAD-style questions (squad_mini, mobilebert_squad_mini)
    multi30k_qa  the cross-lingual Multi30k questions (squad_mini_multi30k)

mlm: masked-word accuracy on the mini's own eval set.

Every baseline predicts each masked word of the mini's eval set (the same windows, the same
masking, from `workloads.bert.shakespeare`) from counts over the training plays' token stream,
looking only at what the model sees: the masked `input_ids` (a neighbour may itself be `[MASK]` or
a random word). Count models back off when a context word is special (`[CLS]`, `[SEP]`, `[MASK]`)
or the context was never seen in training. Ties go to the lower id (the more frequent word, since
the vocabulary is frequency-ranked). `[UNK]` and special tokens are never predicted (never targets).

  most-frequent   "the" everywhere
  unigram         the same: argmax of the unconditioned word distribution (kept for the record)
  bigram          argmax count(l1 -> w), backs off to unigram
  trigram         argmax count(l2 l1 -> w), backs off to bigram
  bidirectional   argmax count(l1 _ r1 -> w), backs off to bigram
  bidi-5          argmax count(l2 l1 _ r1 r2 -> w), backs off to bidirectional
  markov          argmax P(w | l1) P(r1 | w) (add-0.01 smoothed bigrams): the exact posterior of
                  the middle word under a bigram chain, backs off to unigram
  bidi-gap        argmax count(l at distance dl, r at distance dr -> w) over the nearest word the
                  input shows on each side (skipping `[MASK]`s, up to 3 positions, not past
                  `[CLS]`/`[SEP]`), backs off to the left word alone, then the right word alone,
                  then unigram: it uses the words past a masked neighbour, where the others back
                  off (and the right word where the left is `[CLS]`/`[SEP]`)

BERT masking leaves 10% of the masked words unchanged in the input (and puts a random word at
another 10%), so each baseline also has a "+copy" variant: predict the word the input shows at
the masked position when it is a word, else the baseline. The model can learn that too.
"bidi-gap +gated copy" copies the shown word only where it fits its neighbours: where its
markov score log P(w | l1) + log P(r1 | w) is within GATE_NATS of the best word's (or no
neighbour is a word), else bidi-gap. It tells a kept word from a random one, as a model can.
GATE_NATS = 10 is the best of 2, 4, ..., 20 on the mini's own eval set (0.1889; 8: 0.1872, 12:
0.1885, 2026-12-02), so this baseline is tuned on the eval set: an upper bound for its kind.

    JAX_PLATFORMS=cpu python baselines/bert.py mlm [--config=mini] [--config.KEY=VALUE ...]

squad: baselines of the Shakespeare SQuAD-style questions (`workloads/bert/shakespeare_qa.py`),
scored by the official SQuAD v1.1 F1 / EM (`workloads/bert/squad_eval.py`) on held-out plays.

    python baselines/bert.py squad [--count=1000] [--seed=1] [--without-quote]

Answers that do not read the question: the first speaker of the context, the last one, the
most frequent one (ties: the earliest); and one that does: the speaker of the speech sharing
the most words with the question (word overlap, lower-cased; ties: the earliest speech), and
the speaker of the longest speech (characters; ties: the earliest). `--without-quote` cuts the
quoted line out of the context (`shakespeare_qa.records(..., quote_in_context=False)`).

multi30k_qa: baselines of the cross-lingual Multi30k questions (`workloads/bert/multi30k_qa.py`),
scored by the official SQuAD v1.1 F1 / EM (`workloads/bert/squad_eval.py`) on the eval questions.

    python baselines/bert.py multi30k_qa [--data_dir=DIR] [--captions=4] [--count=1000] [--seed=1]

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
    training pairs' word sets: `baselines/transformer.py`'s `dice_lexicon`, ties broken
    alphabetically so the figure does not depend on the string hash seed), then word overlap
    with the translation.
Ties: the earliest caption. Each subcommand prints one line per baseline; the config
docstrings quote them.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys

import numpy as np

from tpubench import config as config_lib
from workloads.bert import multi30k_qa, shakespeare, shakespeare_qa, squad_eval

N_SPECIAL = len(shakespeare.SPECIAL_TOKENS)
GATE_NATS = 10.0


def eval_set(config) -> tuple[shakespeare.ShakespeareCorpus, dict[str, np.ndarray]]:
    """The corpus and the fixed eval examples exactly as the workload builds them."""
    corpus = shakespeare.ShakespeareCorpus(int(config.model.vocab_size))
    examples = shakespeare.eval_examples(
        corpus, int(config.eval.samples), int(config.data.max_seq_length),
        int(config.data.max_predictions_per_seq), float(config.data.masked_lm_prob),
        float(config.data.mask_token_share),
    )
    return corpus, examples


def _neighbour(examples: dict[str, np.ndarray], offset: int) -> np.ndarray:
    """The visible input token at masked position + offset ([PAD] outside the window)."""
    ids = examples["input_ids"]
    pos = examples["masked_lm_positions"] + offset
    inside = (pos >= 0) & (pos < ids.shape[1])
    got = np.take_along_axis(ids, np.clip(pos, 0, ids.shape[1] - 1), axis=1)
    return np.where(inside, got, shakespeare.PAD)


MAX_GAP = 3


def _nearest_word(examples: dict[str, np.ndarray], side: int) -> tuple[np.ndarray, np.ndarray]:
    """The nearest input word on one side (-1 left, +1 right) of each masked position and its
    distance (1..MAX_GAP), skipping `[MASK]`s; distance 0 where the first non-`[MASK]` token is
    `[UNK]`, `[CLS]`, `[SEP]`, the window's edge or farther than MAX_GAP."""
    found = np.zeros(examples["masked_lm_positions"].shape, np.int64)
    dist = np.zeros_like(found)
    open_ = np.ones(found.shape, bool)  # only [MASK]s so far
    for d in range(1, MAX_GAP + 1):
        x = _neighbour(examples, side * d)
        take = open_ & (x >= N_SPECIAL)
        found = np.where(take, x, found)
        dist = np.where(take, d, dist)
        open_ &= x == shakespeare.MASK
    return found, dist


def _argmax_table(keys: np.ndarray, targets: np.ndarray) -> dict[int, int]:
    """key -> the most frequent target after it (ties: lowest id); [UNK] targets ignored."""
    keep = targets >= N_SPECIAL
    keys, targets = keys[keep].astype(np.int64), targets[keep].astype(np.int64)
    pairs, counts = np.unique(np.stack([keys, targets], 1), axis=0, return_counts=True)
    # Sort by key, then count descending, then target ascending; first row per key wins.
    order = np.lexsort((pairs[:, 1], -counts, pairs[:, 0]))
    pairs = pairs[order]
    first = np.r_[True, pairs[1:, 0] != pairs[:-1, 0]]
    return dict(zip(pairs[first, 0].tolist(), pairs[first, 1].tolist(), strict=True))


def _key(columns: list[np.ndarray], vocab: int) -> np.ndarray:
    key = np.zeros(columns[0].shape, np.int64)
    for col in columns:
        key = key * vocab + col.astype(np.int64)
    return key


class CountModels:
    """N-gram argmax tables over the training stream, queried with backoff."""

    def __init__(self, tokens: np.ndarray, vocab: int):
        self.vocab = vocab
        t = tokens.astype(np.int64)
        n = len(t)
        self.unigram = int(np.argmax(np.bincount(t[t >= N_SPECIAL], minlength=vocab)))
        # Windows (l2, l1, w, r1, r2) over the stream.
        l2, l1, w, r1, r2 = (t[i:n - 4 + i] for i in range(5))
        self.tables = {
            "bigram": _argmax_table(_key([l1], vocab), w),
            "trigram": _argmax_table(_key([l2, l1], vocab), w),
            "bidirectional": _argmax_table(_key([l1, r1], vocab), w),
            "bidi-5": _argmax_table(_key([l2, l1, r1, r2], vocab), w),
        }
        # Gap tables: (word dl to the left, dl, word dr to the right, dr) -> the word between.
        g = MAX_GAP
        mid = t[g:n - g]
        for dl in range(1, g + 1):
            left = t[g - dl:n - g - dl]
            self.tables[f"left-{dl}"] = _argmax_table(left, mid)
            self.tables[f"right-{dl}"] = _argmax_table(t[g + dl:n - g + dl], mid)
            for dr in range(1, g + 1):
                self.tables[f"gap-{dl}-{dr}"] = _argmax_table(
                    _key([left, t[g + dr:n - g + dr]], vocab), mid)
        bigram = np.zeros((vocab, vocab), np.float64)
        np.add.at(bigram, (t[:-1], t[1:]), 1.0)
        bigram += 0.01
        self.log_next = np.log(bigram / bigram.sum(1, keepdims=True))  # log P(next | prev)
        self.log_next[:, :N_SPECIAL] = -np.inf  # never predict [UNK] or specials

    def _lookup(self, name: str, columns: list[np.ndarray], fallback: np.ndarray) -> np.ndarray:
        table = self.tables[name]
        valid = np.all([c >= shakespeare.UNK for c in columns], axis=0)
        valid &= np.all([c != shakespeare.MASK for c in columns]
                        + [c != shakespeare.CLS for c in columns]
                        + [c != shakespeare.SEP for c in columns], axis=0)
        keys = _key(columns, self.vocab)
        out = fallback.copy()
        for idx in zip(*np.nonzero(valid), strict=True):
            hit = table.get(int(keys[idx]))
            if hit is not None:
                out[idx] = hit
        return out

    def _gap(self, examples: dict[str, np.ndarray], uni: np.ndarray) -> np.ndarray:
        """bidi-gap: both nearest words, else the left one, else the right one, else unigram."""
        (left, dl), (right, dr) = _nearest_word(examples, -1), _nearest_word(examples, 1)
        out = uni.copy()
        keys = _key([left, right], self.vocab)
        for idx in zip(*np.nonzero((dl > 0) | (dr > 0)), strict=True):
            a, b = int(dl[idx]), int(dr[idx])
            tries = [(f"gap-{a}-{b}", int(keys[idx]))] if a and b else []
            if a:
                tries.append((f"left-{a}", int(left[idx])))
            if b:
                tries.append((f"right-{b}", int(right[idx])))
            for name, key in tries:
                hit = self.tables[name].get(key)
                if hit is not None:
                    out[idx] = hit
                    break
        return out

    def fits(self, examples: dict[str, np.ndarray], shown: np.ndarray) -> np.ndarray:
        """Where the shown word's markov score is within GATE_NATS of the best word's, or no
        neighbour is a word (nothing to judge it by)."""
        l1, r1 = _neighbour(examples, -1), _neighbour(examples, 1)
        lw, rw = _is_word(l1), _is_word(r1)
        w = np.clip(shown, 0, self.vocab - 1)
        s_shown = (np.where(lw, self.log_next[l1, w], 0.0)
                   + np.where(rw, self.log_next[w, r1], 0.0))
        scores = np.where(lw[..., None], self.log_next[l1], 0.0)
        scores = scores + np.where(rw[..., None], self.log_next[:, r1].transpose(1, 2, 0), 0.0)
        return ~(lw | rw) | (s_shown >= scores.max(-1) - GATE_NATS)

    def predict(self, examples: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every baseline's predictions, shaped like `masked_lm_ids`."""
        l2, l1, r1, r2 = (_neighbour(examples, o) for o in (-2, -1, 1, 2))
        uni = np.full(l1.shape, self.unigram, np.int64)
        bigram = self._lookup("bigram", [l1], uni)
        bidi = self._lookup("bidirectional", [l1, r1], bigram)

        def word(x: np.ndarray) -> np.ndarray:
            return (x >= shakespeare.UNK) & (x != shakespeare.MASK) & (x != shakespeare.CLS) & (
                x != shakespeare.SEP)

        scores = np.zeros(l1.shape + (self.vocab,))
        scores += np.where(word(l1)[..., None], self.log_next[l1], 0.0)
        scores += np.where(word(r1)[..., None], self.log_next[:, r1].transpose(1, 2, 0), 0.0)
        markov = np.where(word(l1) | word(r1), np.argmax(scores, -1), uni)
        return {
            "most-frequent": np.full(l1.shape, N_SPECIAL, np.int64),
            "unigram": uni,
            "bigram": bigram,
            "trigram": self._lookup("trigram", [l2, l1], bigram),
            "bidirectional": bidi,
            "bidi-5": self._lookup("bidi-5", [l2, l1, r1, r2], bidi),
            "markov": markov,
            "bidi-gap": self._gap(examples, uni),
        }


def _is_word(x: np.ndarray) -> np.ndarray:
    return (x >= shakespeare.UNK) & (x != shakespeare.MASK) & (x != shakespeare.CLS) & (
        x != shakespeare.SEP)


def accuracy(pred: np.ndarray, examples: dict[str, np.ndarray]) -> float:
    """Masked-LM accuracy weighted by `masked_lm_weights`, as the workload's eval computes it."""
    w = examples["masked_lm_weights"]
    return float(((pred == examples["masked_lm_ids"]) * w).sum() / w.sum())


def mlm_baselines(config) -> dict[str, float]:
    """Name -> masked-word accuracy on `config`'s eval set, with and without "+copy"."""
    corpus, examples = eval_set(config)
    models = CountModels(corpus.train_tokens, len(corpus.vocab))
    preds = models.predict(examples)
    shown = _neighbour(examples, 0)
    copy = shown >= N_SPECIAL
    out = {}
    for name, pred in preds.items():
        out[name] = accuracy(pred, examples)
        out[name + " +copy"] = accuracy(np.where(copy, shown, pred), examples)
    gated = copy & models.fits(examples, shown)
    out["bidi-gap +gated copy"] = accuracy(np.where(gated, shown, preds["bidi-gap"]), examples)
    return out


# --- squad: the Shakespeare SQuAD-style questions --------------------------------------------

_SQUAD_WORD = re.compile(r"[a-z']+")


def _squad_words(text: str) -> list[str]:
    return _SQUAD_WORD.findall(text.lower())


def overlap_speaker(r: dict) -> str:
    """The speaker whose speech shares the most (multiset) words with the question."""
    q = collections.Counter(_squad_words(r["question"]))
    scores = [sum((q & collections.Counter(_squad_words(s))).values()) for s in r["speeches"]]
    return r["speakers"][scores.index(max(scores))]


SQUAD_BASELINES = {
    "first speaker": lambda r: r["speakers"][0],
    "last speaker": lambda r: r["speakers"][-1],
    "most frequent speaker": lambda r: collections.Counter(r["speakers"]).most_common(1)[0][0],
    "word-overlap speaker": overlap_speaker,
    "longest-speech speaker": lambda r: r["speakers"][
        max(range(len(r["speeches"])), key=lambda i: (len(r["speeches"][i]), -i))],
}


def squad_scores(records: list[dict]) -> dict[str, dict[str, float]]:
    """{baseline: {"exact_match", "f1"}} on the records."""
    truths = [(r["id"], r["answers"]) for r in records]
    return {name: squad_eval.evaluate(truths, {r["id"]: f(r) for r in records})
            for name, f in SQUAD_BASELINES.items()}


# --- multi30k_qa: the cross-lingual Multi30k questions ---------------------------------------

_QA_WORD = re.compile(r"\w+")


def _qa_words(text: str) -> list[str]:
    return _QA_WORD.findall(text.lower())


def _trigrams(text: str) -> set[str]:
    t = " ".join(_qa_words(text))
    return {t[i:i + 3] for i in range(len(t) - 2)}


def _argmax(scores) -> int:
    return int(np.argmax(np.asarray(scores, np.float64)))  # first of ties


def _overlap(a: list[str], b: list[str]) -> int:
    return sum((collections.Counter(a) & collections.Counter(b)).values())


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / max(len(a | b), 1)


def qa_lexicon(train: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """German word -> the English word of highest Dice coefficient over the training pairs'
    word sets (ties: the alphabetically first): `baselines/transformer.py`'s `dice_lexicon`."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling baselines
    from transformer import dice_lexicon

    return dice_lexicon(((de, en) for en, de in train), _qa_words)


def multi30k_qa_baselines(train: tuple[tuple[str, str], ...], records: list[dict]) -> dict:
    """{name: record -> answer text}."""
    ratio = float(np.median([len(de) / len(en) for en, de in train]))

    def length_error(r, c):
        return abs(len(c) * ratio - len(r["question"])) / len(r["question"])

    words_de_en = qa_lexicon(train)

    def pick(score):
        return lambda r: r["candidates"][_argmax([score(r, c) for c in r["candidates"]])]

    return {
        "first caption": lambda r: r["candidates"][0],
        "last caption": lambda r: r["candidates"][-1],
        "longest caption": pick(lambda r, c: len(c)),
        "shortest caption": pick(lambda r, c: -len(c)),
        "length match": pick(lambda r, c: -length_error(r, c)),
        "word overlap": pick(lambda r, c: _overlap(_qa_words(r["question"]), _qa_words(c))),
        "char 3-gram overlap": pick(lambda r, c: _jaccard(_trigrams(r["question"]),
                                                          _trigrams(c))),
        "length + 3-grams": pick(lambda r, c: _jaccard(_trigrams(r["question"]), _trigrams(c))
                                 - length_error(r, c)),
        "learned lexicon (Dice)": pick(lambda r, c: _overlap(
            [words_de_en.get(w, w) for w in _qa_words(r["question"])], _qa_words(c))),
    }


def multi30k_qa_scores(data_dir: str, records: list[dict]) -> dict[str, dict[str, float]]:
    """{baseline: {"exact_match", "f1"}} on the records."""
    truths = [(r["id"], r["answers"]) for r in records]
    train = multi30k_qa.pairs(data_dir, "train")
    return {name: squad_eval.evaluate(truths, {r["id"]: f(r) for r in records})
            for name, f in multi30k_qa_baselines(train, records).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="task", required=True)
    mlm = sub.add_parser("mlm", help="the BERT mini's masked words (--config.KEY=VALUE too)")
    mlm.add_argument("--config", default="mini")
    squad = sub.add_parser("squad", help="the Shakespeare SQuAD-style questions")
    squad.add_argument("--count", type=int, default=1000)
    squad.add_argument("--seed", type=int, default=1)
    squad.add_argument("--without-quote", action="store_true")
    qa = sub.add_parser("multi30k_qa", help="the cross-lingual Multi30k questions")
    qa.add_argument("--data_dir", default=os.environ.get("TPUBENCH_DATA_DIR", ""))
    qa.add_argument("--captions", type=int, default=4)
    qa.add_argument("--count", type=int, default=1000)
    qa.add_argument("--seed", type=int, default=1)
    args, rest = parser.parse_known_args()
    if args.task != "mlm" and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.task == "mlm":
        config = config_lib.load("bert", args.config, rest)
        _, examples = eval_set(config)
        print(f"bert/{args.config}: {int(examples['masked_lm_weights'].sum())} masked words in "
              f"{len(examples['input_ids'])} eval windows")
        for name, acc in mlm_baselines(config).items():
            print(f"  {name:22s} {acc:.4f}")
    elif args.task == "squad":
        records = shakespeare_qa.records("eval", args.count, args.seed,
                                         quote_in_context=not args.without_quote)
        print(f"{len(records)} held-out questions (seed {args.seed}, quote in context: "
              f"{not args.without_quote})")
        for name, s in squad_scores(records).items():
            print(f"  {name:<24} F1 {s['f1']:.2f}  EM {s['exact_match']:.2f}")
    else:
        records = multi30k_qa.records(args.data_dir, "eval", args.count, args.seed,
                                      args.captions)
        print(f"{len(records)} eval questions, {args.captions} captions a context "
              f"(seed {args.seed})")
        for name, s in multi30k_qa_scores(args.data_dir, records).items():
            print(f"  {name:<24} F1 {s['f1']:.2f}  EM {s['exact_match']:.2f}")


if __name__ == "__main__":
    main()
