"""SQuAD v1.1 for BERT: examples -> fixed-size features, and start/end logits -> answer text.

This is the MLPerf Inference v0.7 reference's processing (mlcommons/inference
`language/bert`: `create_squad_data.py` makes the features, `accuracy-squad.py` turns the logits
back into answers; both are Google's `run_squad.py` functions), with its constants:
max_seq_length 384, doc_stride 128, max_query_length 64, n_best_size 20, max_answer_length 30,
uncased. The tokenizer is the reference's own: `bert.tokenization.FullTokenizer` (Google's
`tokenization.py`, PyPI `bert-tensorflow`): basic tokenisation (lower case, accents stripped,
punctuation split) then greedy longest-match WordPiece.

  * Context -> words: split on whitespace (space, tab, CR, LF, U+202F), keeping each character's
    word index, so an answer's `answer_start` character maps to words.
  * Features: `[CLS] query [SEP] doc-window [SEP]`, the query cut to 64 WordPieces, the context's
    WordPieces in windows of at most 384 - len(query) - 3 tokens starting every 128 tokens
    (`doc_stride`); each window token records its word (`token_to_orig`) and whether this window
    is its "max context" one (min(left, right) context + 0.01 * window length is largest).
    Training features also carry the answer's start/end token, improved to the WordPiece span
    whose text equals the tokenised answer, and (0, 0) when the window does not hold it.
  * Answers: per feature the 20 best start and 20 best end logits (stable order); a (start, end)
    pair is kept if both lie in the window's context, the start is a max-context token, end >=
    start and the span has at most 30 tokens; pairs of all an example's features are sorted by
    start + end logit, and the first whose text (WordPieces joined, then projected back onto
    the original words by `final_text`) is new becomes the answer; "empty" if none is valid.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

MAX_SEQ_LENGTH = 384
DOC_STRIDE = 128
MAX_QUERY_LENGTH = 64
N_BEST_SIZE = 20
MAX_ANSWER_LENGTH = 30
NO_ANSWER = "empty"  # the reference's answer when no span is valid


@dataclasses.dataclass(frozen=True)
class Example:
    """One question on one context: the context's whitespace words, the ground-truth texts and
    (for training) the first answer's word span."""

    qas_id: str
    question: str
    doc_tokens: tuple[str, ...]
    answers: tuple[str, ...] = ()
    answer_text: str = ""
    start_word: int = -1
    end_word: int = -1


@dataclasses.dataclass(frozen=True)
class Feature:
    """One window of one example, as the model sees it (unpadded lists are padded in
    `feature_arrays`)."""

    example_index: int
    doc_span_index: int
    tokens: tuple[str, ...]
    token_to_orig: dict[int, int]
    max_context: dict[int, bool]
    input_ids: tuple[int, ...]
    segment_ids: tuple[int, ...]
    start_position: int = 0
    end_position: int = 0


def _tokenization() -> Any:
    """Google's `tokenization` module. Its one absl flag, `preserve_unused_tokens` (added after
    the reference's data was made; default False = the original behaviour), is read at every
    call; outside an absl program nothing parses flags, so it is marked as given, at its
    default, instead of failing with UnparsedFlagAccessError."""
    from bert import tokenization

    flag = tokenization.FLAGS["preserve_unused_tokens"]
    if not tokenization.FLAGS.is_parsed() and not flag.present:
        flag.present = 1
    return tokenization


def full_tokenizer(vocab_file: str, do_lower_case: bool = True) -> Any:
    """The reference's tokenizer (`bert.tokenization.FullTokenizer`) on a WordPiece vocab."""
    tokenization = _tokenization()
    return tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)


def _is_whitespace(c: str) -> bool:
    return c in (" ", "\t", "\r", "\n") or ord(c) == 0x202F


def context_words(context: str) -> tuple[list[str], list[int]]:
    """The context's whitespace-separated words and, per character, its word index."""
    words: list[str] = []
    char_to_word: list[int] = []
    prev_space = True
    for c in context:
        if _is_whitespace(c):
            prev_space = True
        else:
            if prev_space:
                words.append(c)
            else:
                words[-1] += c
            prev_space = False
        char_to_word.append(len(words) - 1)
    return words, char_to_word


def make_example(qas_id: str, question: str, context: str, answers: Sequence[str] = (),
                 answer_starts: Sequence[int] = ()) -> Example:
    """An `Example`; with answers, the first one's character span gives the word span."""
    words, char_to_word = context_words(context)
    start = end = -1
    text = ""
    if answers and answer_starts:
        text = answers[0]
        offset = int(answer_starts[0])
        start = char_to_word[offset]
        end = char_to_word[offset + len(text) - 1]
    return Example(qas_id, question, tuple(words), tuple(answers), text, start, end)


def _improve_answer_span(doc_tokens: Sequence[str], start: int, end: int, tokenizer: Any,
                         answer_text: str) -> tuple[int, int]:
    tok_answer = " ".join(tokenizer.tokenize(answer_text))
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start:new_end + 1]) == tok_answer:
                return new_start, new_end
    return start, end


def _is_max_context(spans: Sequence[tuple[int, int]], span_index: int, position: int) -> bool:
    best_score, best_index = None, None
    for i, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, i
    return span_index == best_index


def convert_examples(examples: Sequence[Example], tokenizer: Any,
                     max_seq_length: int = MAX_SEQ_LENGTH, doc_stride: int = DOC_STRIDE,
                     max_query_length: int = MAX_QUERY_LENGTH,
                     training: bool = False) -> list[Feature]:
    """The reference's `convert_examples_to_features`: every window of every example."""
    features: list[Feature] = []
    for example_index, example in enumerate(examples):
        query = tokenizer.tokenize(example.question)[:max_query_length]
        tok_to_orig: list[int] = []
        orig_to_tok: list[int] = []
        doc: list[str] = []
        for i, word in enumerate(example.doc_tokens):
            orig_to_tok.append(len(doc))
            for sub in tokenizer.tokenize(word):
                tok_to_orig.append(i)
                doc.append(sub)
        tok_start = tok_end = -1
        if training:
            tok_start = orig_to_tok[example.start_word]
            if example.end_word < len(example.doc_tokens) - 1:
                tok_end = orig_to_tok[example.end_word + 1] - 1
            else:
                tok_end = len(doc) - 1
            tok_start, tok_end = _improve_answer_span(doc, tok_start, tok_end, tokenizer,
                                                      example.answer_text)
        max_doc = max_seq_length - len(query) - 3
        spans: list[tuple[int, int]] = []
        offset = 0
        while offset < len(doc):
            length = min(len(doc) - offset, max_doc)
            spans.append((offset, length))
            if offset + length == len(doc):
                break
            offset += min(length, doc_stride)
        for span_index, (start, length) in enumerate(spans):
            tokens = ["[CLS]", *query, "[SEP]"]
            segment_ids = [0] * len(tokens)
            token_to_orig: dict[int, int] = {}
            max_context: dict[int, bool] = {}
            for i in range(length):
                token_to_orig[len(tokens)] = tok_to_orig[start + i]
                max_context[len(tokens)] = _is_max_context(spans, span_index, start + i)
                tokens.append(doc[start + i])
                segment_ids.append(1)
            tokens.append("[SEP]")
            segment_ids.append(1)
            start_pos = end_pos = 0
            if training and start <= tok_start and tok_end <= start + length - 1:
                start_pos = tok_start - start + len(query) + 2
                end_pos = tok_end - start + len(query) + 2
            features.append(Feature(
                example_index, span_index, tuple(tokens), token_to_orig, max_context,
                tuple(tokenizer.convert_tokens_to_ids(tokens)), tuple(segment_ids),
                start_pos, end_pos))
    return features


def feature_arrays(features: Sequence[Feature], max_seq_length: int = MAX_SEQ_LENGTH,
                   training: bool = False) -> dict[str, np.ndarray]:
    """The model's inputs, zero-padded to `max_seq_length` (and the positions when training)."""
    n = len(features)
    out = {k: np.zeros((n, max_seq_length), np.int32)
           for k in ("input_ids", "input_mask", "segment_ids")}
    for i, f in enumerate(features):
        out["input_ids"][i, :len(f.input_ids)] = f.input_ids
        out["input_mask"][i, :len(f.input_ids)] = 1
        out["segment_ids"][i, :len(f.segment_ids)] = f.segment_ids
    if training:
        out["start_positions"] = np.array([f.start_position for f in features], np.int32)
        out["end_positions"] = np.array([f.end_position for f in features], np.int32)
    return out


def best_indexes(logits: Sequence[float], n_best_size: int) -> list[int]:
    """Indices of the `n_best_size` largest logits, largest first, ties by lower index."""
    order = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [i for i, _ in order[:n_best_size]]


def _strip_spaces(text: str) -> tuple[str, dict[int, int]]:
    chars, ns_to_s = [], {}
    for i, c in enumerate(text):
        if c == " ":
            continue
        ns_to_s[len(chars)] = i
        chars.append(c)
    return "".join(chars), ns_to_s


def final_text(pred_text: str, orig_text: str, basic_tokenize: Callable[[str], list[str]]) -> str:
    """The reference's `get_final_text`: `pred_text` (normalised WordPiece text) projected back
    onto `orig_text` (the original words it spans) by a character alignment; `orig_text` when
    the alignment fails."""
    tok_text = " ".join(basic_tokenize(orig_text))
    start = tok_text.find(pred_text)
    if start == -1:
        return orig_text
    end = start + len(pred_text) - 1
    orig_ns, orig_map = _strip_spaces(orig_text)
    tok_ns, tok_map = _strip_spaces(tok_text)
    if len(orig_ns) != len(tok_ns):
        return orig_text
    tok_s_to_ns = {s: ns for ns, s in tok_map.items()}
    orig_start = orig_map.get(tok_s_to_ns[start]) if start in tok_s_to_ns else None
    orig_end = orig_map.get(tok_s_to_ns[end]) if end in tok_s_to_ns else None
    if orig_start is None or orig_end is None:
        return orig_text
    return orig_text[orig_start:orig_end + 1]


def basic_tokenizer(do_lower_case: bool = True) -> Callable[[str], list[str]]:
    """The reference's `BasicTokenizer(do_lower_case).tokenize`."""
    return _tokenization().BasicTokenizer(do_lower_case=do_lower_case).tokenize


def answer_text(example: Example, features: Sequence[Feature], start_logits: Sequence[Any],
                end_logits: Sequence[Any], basic_tokenize: Callable[[str], list[str]],
                n_best_size: int = N_BEST_SIZE,
                max_answer_length: int = MAX_ANSWER_LENGTH) -> str:
    """The predicted answer of one example from its features' logits (the reference's
    `write_predictions`, SQuAD v1.1: no null answer)."""
    prelim = []
    for fi, (feature, starts, ends) in enumerate(zip(features, start_logits, end_logits,
                                                     strict=True)):
        starts, ends = list(map(float, starts)), list(map(float, ends))
        n_tokens = len(feature.tokens)
        for s in best_indexes(starts, n_best_size):
            for e in best_indexes(ends, n_best_size):
                if s >= n_tokens or e >= n_tokens:
                    continue
                if s not in feature.token_to_orig or e not in feature.token_to_orig:
                    continue
                if not feature.max_context.get(s, False) or e < s:
                    continue
                if e - s + 1 > max_answer_length:
                    continue
                prelim.append((starts[s] + ends[e], fi, s, e))
    if not prelim:
        return NO_ANSWER  # the reference's nonce answer
    # The reference sorts the pairs by start + end logit (stable: ties keep their order) and
    # answers the first entry of its n-best list, which is the first pair's text.
    _, fi, s, e = max(prelim, key=lambda p: p[0])
    feature = features[fi]
    tok_text = " ".join(feature.tokens[s:e + 1]).replace(" ##", "").replace("##", "")
    tok_text = " ".join(tok_text.strip().split())
    orig = " ".join(example.doc_tokens[feature.token_to_orig[s]:feature.token_to_orig[e] + 1])
    return final_text(tok_text, orig, basic_tokenize)


def predictions(examples: Sequence[Example], features: Sequence[Feature],
                start_logits: np.ndarray, end_logits: np.ndarray,
                basic_tokenize: Callable[[str], list[str]] | None = None,
                n_best_size: int = N_BEST_SIZE,
                max_answer_length: int = MAX_ANSWER_LENGTH) -> dict[str, str]:
    """{qas_id: answer text} for every example, from per-feature logits [features, seq]."""
    basic_tokenize = basic_tokenize or basic_tokenizer()
    by_example: dict[int, list[int]] = collections.defaultdict(list)
    for i, f in enumerate(features):
        by_example[f.example_index].append(i)
    out = {}
    for ei, example in enumerate(examples):
        idx = by_example.get(ei, [])
        out[example.qas_id] = answer_text(
            example, [features[i] for i in idx], [start_logits[i] for i in idx],
            [end_logits[i] for i in idx], basic_tokenize, n_best_size, max_answer_length)
    return out
