"""The MLPerf v0.7 reference's subword vocabulary: build it, load it, encode and decode with it.

Reference: mlcommons/training v0.7 `translation/tensorflow/transformer/utils/tokenizer.py`
(class `Subtokenizer`) and `data_download.py` (which builds `vocab.ende.32768` from the six
training files with `min_count=6`). This module implements the same algorithm and file format
so that

* `load(path)` of the published `vocab.ende.32768` gives every subtoken the reference's id
  (its 0-based line number, as the reference's `init_from_existing_vocab_file` does with
  `reserved_tokens='assumed_in_file'`), and `encode` produces the reference's ids;
* `build(token_counts, min_count)` generates a vocabulary the way the reference does from the
  same token counts (`count_tokens` samples ~1 MB per file with the reference's line skipping).

Why not `tfds.deprecated.text.SubwordTextEncoder` (the maintained descendant of the same
tensor2tensor algorithm): it appends "_" only to tokens followed by a single space (the reference
ends every token with "_"), falls back to 256 byte ids instead of escaping unknown characters as
`\\NNN;` with the alphabet in the vocabulary, caps subwords at 20 characters, binary-searches the
minimum count to within 1% of a target size (the reference fixes min_count=6, which gives 33,708
subtokens), and numbers ids differently (pad 0, subwords, then bytes). None of its vocabularies
can be the reference's, nor can it read `vocab.ende.32768`.

Ids: 0 = `<pad>_` (PAD, also the decoder start), 1 = `<EOS>_` (EOS); there is no UNK (every
character is encodable through the escape).
"""

from __future__ import annotations

import collections
import os
import pathlib
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator

import numpy as np

from tpubench.text.ids import EOS_ID, PAD_ID

PAD = "<pad>_"
EOS = "<EOS>_"
RESERVED = (PAD, EOS)
ESCAPE_CHARS = frozenset("\\_u;0123456789")
_UNESCAPE = re.compile(r"\\u|\\\\|\\([0-9]+);")
_ALNUM = frozenset(
    c for c in map(chr, range(sys.maxunicode))
    if unicodedata.category(c)[0] in ("L", "N")
)


def split_tokens(text: str) -> list[str]:
    """Split at every change between alphanumeric and other characters; a single space between
    two tokens is dropped (it is implied by the "_" that ends each token)."""
    if not text:
        return []
    out, start = [], 0
    kinds = [c in _ALNUM for c in text]
    for i in range(1, len(text)):
        if kinds[i] != kinds[i - 1]:
            token = text[start:i]
            if token != " " or start == 0:
                out.append(token)
            start = i
    out.append(text[start:])
    return out


def join_tokens(tokens: list[str]) -> str:
    """Inverse of `split_tokens`: a space goes back between two alphanumeric tokens."""
    pieces = []
    for i, token in enumerate(tokens):
        if i and tokens[i - 1][0] in _ALNUM and token[0] in _ALNUM:
            pieces.append(" ")
        pieces.append(token)
    return "".join(pieces)


def escape(token: str, alphabet: frozenset[str] | set[str]) -> str:
    """`\\` -> `\\\\`, `_` -> `\\u`, characters outside `alphabet` (and newlines) -> `\\NNN;`,
    then the end-of-token marker `_`."""
    token = token.replace("\\", "\\\\").replace("_", "\\u")
    return "".join(c if c in alphabet and c != "\n" else f"\\{ord(c)};" for c in token) + "_"


def unescape(token: str) -> str:
    """Inverse of `escape` without the final `_` (an invalid code point becomes U+3013)."""

    def one(m: re.Match) -> str:
        if m.group(1) is None:
            return "_" if m.group(0) == "\\u" else "\\"
        try:
            return chr(int(m.group(1)))
        except (ValueError, OverflowError):
            return "\u3013"

    return _UNESCAPE.sub(one, token)


def greedy_split(token: str, vocab: dict[str, int], max_len: int) -> list[str]:
    """Longest-match-first segmentation of an escaped token into vocabulary subtokens."""
    out, start = [], 0
    while start < len(token):
        for end in range(min(len(token), start + max_len), start, -1):
            if token[start:end] in vocab:
                out.append(token[start:end])
                start = end
                break
        else:
            raise ValueError(f"cannot split {token!r} into subtokens (character not in alphabet)")
    return out


# ---- building a vocabulary (data_download.py step 3) ------------------------------------------
def sample_lines(lines: Iterable[str], file_chars: int, byte_limit: int = 10**6) -> Iterator[str]:
    """The reference's ~`byte_limit` sample of one file: keep one line, skip
    `file_chars // (2 * byte_limit)`, and so on, until `byte_limit` characters (of stripped
    lines) are used. `file_chars` is the file's size."""
    budget = byte_limit
    skip = int(file_chars / (budget * 2))
    skipped = 0
    for line in lines:
        if skipped < skip:
            skipped += 1
            continue
        if budget < 0:
            break
        line = line.strip()
        budget -= len(line)
        skipped = 0
        yield line


def count_tokens(lines: Iterable[str]) -> collections.Counter:
    """Token counts of `lines` (already sampled)."""
    counts: collections.Counter = collections.Counter()
    for line in lines:
        counts.update(split_tokens(line))
    return counts


def _alphabet(strings: Iterable[str]) -> set[str]:
    chars = {c for s in strings for c in s}
    chars |= {c for s in RESERVED for c in s}
    return chars | ESCAPE_CHARS


def build(token_counts: dict[str, int], min_count: int, iterations: int = 4) -> list[str]:
    """The reference's subtoken list for `token_counts` at a fixed `min_count`: reserved tokens,
    then subtokens (and every alphabet character) by decreasing count."""
    alphabet = _alphabet(token_counts)
    subtokens = list(RESERVED) + sorted(alphabet)
    max_len = 1
    escaped = [(escape(t, alphabet), n) for t, n in token_counts.items()]
    for _ in range(iterations):
        vocab = {s: i for i, s in enumerate(subtokens)}
        counts: collections.defaultdict = collections.defaultdict(int)
        for token, n in escaped:  # count every substring that starts at a current boundary
            start = 0
            for piece in greedy_split(token, vocab, max_len):
                for end in range(start + 1, len(token) + 1):
                    counts[token[start:end]] += n
                start += len(piece)
        by_len: list[set[str]] = []
        for s, n in counts.items():
            if n >= min_count:
                while len(by_len) <= len(s):
                    by_len.append(set())
                by_len[len(s)].add(s)
        max_len = len(by_len) - 1
        candidates = []
        for length in range(max_len, 0, -1):  # longest first: a kept subtoken discounts prefixes
            for s in by_len[length]:
                n = counts[s]
                if n < min_count:
                    continue
                if s not in alphabet and s not in RESERVED:
                    candidates.append((n, s))
                for end in range(1, length):
                    counts[s[:end]] -= n
        candidates.extend((counts.get(a, 0), a) for a in alphabet)
        subtokens = list(RESERVED) + [s for _, s in sorted(candidates, reverse=True)]
    return subtokens


def save(subtokens: list[str], path: str | os.PathLike) -> None:
    """The reference's vocab file format: one `'subtoken'` per line (written atomically)."""
    path = pathlib.Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for s in subtokens:
            f.write(f"'{s}'\n")
    tmp.replace(path)


def read_vocab(path: str | os.PathLike) -> list[str]:
    """The subtokens of a vocab file in line order (its ids); the surrounding quotes removed."""
    out = []
    with open(path, encoding="utf-8", newline="\n") as f:
        for line in f:
            out.append(line.strip()[1:-1])
    return out


class Subtokenizer:
    """Encode sentences to reference ids ending in EOS; decode ids (stopping at EOS) to text."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self.subtokens = read_vocab(path)
        if tuple(self.subtokens[:2]) != RESERVED:
            raise ValueError(
                f"{path}: a reference vocab file starts with {PAD!r} (id {PAD_ID}) and {EOS!r} "
                f"(id {EOS_ID}); this one starts with {self.subtokens[:2]}.")
        self.ids = {s: i for i, s in enumerate(self.subtokens)}
        self.alphabet = frozenset(_alphabet(self.subtokens))
        self.max_len = max(len(s) for s in self.subtokens)
        self._cache: dict[str, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        """Subtokens in the vocabulary file."""
        return len(self.subtokens)

    def encode_one(self, text: str) -> list[int]:
        """One sentence -> ids (no EOS), as the reference's `Subtokenizer.encode`."""
        out: list[int] = []
        for token in split_tokens(text):
            ids = self._cache.get(token)
            if ids is None:
                pieces = greedy_split(escape(token, self.alphabet), self.ids, self.max_len)
                ids = self._cache[token] = [self.ids[p] for p in pieces]
            out.extend(ids)
        return out

    def encode(self, sentences: list[str]) -> list[np.ndarray]:
        """Each sentence -> int32 ids followed by EOS."""
        return [np.asarray(self.encode_one(s) + [EOS_ID], np.int32) for s in sentences]

    def decode_one(self, ids: list[int]) -> str:
        """Ids -> text (ids past the vocabulary are dropped, as in the reference)."""
        text = "".join(self.subtokens[i] for i in ids if i < len(self.subtokens))
        return join_tokens([unescape(t) for t in text.split("_") if t])

    def decode(self, rows: np.ndarray) -> list[str]:
        """[n, length] ids -> n strings, each cut at its first EOS (PADs dropped)."""
        out = []
        for row in np.asarray(rows).tolist():
            if EOS_ID in row:
                row = row[: row.index(EOS_ID)]
            out.append(self.decode_one([t for t in row if t != PAD_ID]))
        return out
