"""The 29 symbols of the reference and transcripts <-> ids.

Reference: speech_recognition/rnnt/pytorch/configs/rnnt.toml `[labels]`: " ", "a".."z", "'"
(ids 0..27); the blank is appended last (id 28, decoders.py: "_blank_id is the last id of
dict"). Transcripts are lower-cased; other characters are dropped (the reference's
`normalize_transcripts` keeps exactly these labels).
"""

from __future__ import annotations

import string
from collections.abc import Iterable

import numpy as np

LABELS = " " + string.ascii_lowercase + "'"
BLANK = len(LABELS)  # 28
NUM_CLASSES = len(LABELS) + 1  # 29
_INDEX = {ch: i for i, ch in enumerate(LABELS)}


def encode(text: str) -> list[int]:
    """Lower-cased `text` as label ids, characters outside the 28 labels dropped."""
    return [_INDEX[ch] for ch in text.lower() if ch in _INDEX]


def decode(ids: Iterable[int]) -> str:
    """Label ids -> text; negative ids (padding) and the blank are skipped."""
    return "".join(LABELS[i] for i in ids if 0 <= i < BLANK)


def decode_rows(ids: np.ndarray, lens: np.ndarray) -> list[str]:
    """[N, L] ids and [N] valid counts -> N strings."""
    return [decode(row[:n].tolist()) for row, n in zip(ids, lens, strict=True)]


def require_jiwer():
    """The `jiwer` module, or a `UsageError` saying how to install it."""
    try:
        import jiwer
    except ImportError as e:
        from tpubench.errors import UsageError

        raise UsageError(
            "The RNN-T word error rate needs the `jiwer` package: pip install 'tpubench[speech]' "
            "(or pip install jiwer).") from e
    return jiwer


def word_error_rate(hypotheses: list[str], references: list[str]) -> float:
    """Corpus WER by jiwer: word edit distance summed over utterances / reference words
    (as the reference's accuracy_eval.py `word_error_rate` sums them)."""
    jiwer = require_jiwer()
    if not references:
        return float("nan")
    return float(jiwer.wer(references, [h if h else "" for h in hypotheses]))
