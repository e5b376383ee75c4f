"""The mini's shared source/target vocabulary: a SentencePiece BPE model trained from the
training text by the prepare step (`tpubench/datasets/prepared_text.py`). The full config uses
the reference's subword vocabulary instead (`subtokenizer.py`).

Ids: 0 = PAD (also the decoder start token), 1 = EOS, 2 = UNK; no BOS.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
from collections.abc import Iterable

import numpy as np
import sentencepiece as spm

from tpubench.text.ids import EOS_ID, PAD_ID

UNK_ID = 2
MODEL_TYPE = "bpe"  # trains in seconds where unigram takes ~10x longer; part of the cache key


def train(
    sentences: Iterable[str], vocab_size: int, path: pathlib.Path, max_chars: int = 10**7
) -> None:
    """Train a BPE SentencePiece model on at most `max_chars` characters into `path`.

    `vocab_size` is a soft limit (it shrinks on tiny corpora such as mock data); the model's
    embedding table keeps `vocab_size` rows either way. Written atomically, so concurrent runs
    that share a cache never read a half-written model.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        text = pathlib.Path(tmp) / "corpus.txt"
        chars = 0
        with open(text, "w", encoding="utf-8") as f:
            for s in sentences:
                s = s.strip().replace("\n", " ")
                if not s:
                    continue
                f.write(s + "\n")
                chars += len(s)
                if chars >= max_chars:
                    break
        prefix = pathlib.Path(tmp) / "spm"
        spm.SentencePieceTrainer.train(
            input=str(text), model_prefix=str(prefix), vocab_size=vocab_size,
            model_type=MODEL_TYPE, character_coverage=1.0, hard_vocab_limit=False,
            pad_id=PAD_ID, eos_id=EOS_ID, unk_id=UNK_ID, bos_id=-1,
            input_sentence_size=10**7, shuffle_input_sentence=False, num_threads=2,
            minloglevel=2,
        )
        os.replace(f"{prefix}.model", path)


class Tokenizer:
    """Encode sentences to id arrays ending in EOS, decode ids (stopping at EOS) to text."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self.processor = spm.SentencePieceProcessor(model_file=os.fspath(path))

    @property
    def vocab_size(self) -> int:
        """Pieces in the trained model (<= the configured size)."""
        return self.processor.get_piece_size()

    def encode(self, sentences: list[str]) -> list[np.ndarray]:
        """Each sentence -> int32 ids followed by EOS."""
        return [
            np.asarray(ids + [EOS_ID], np.int32) for ids in self.processor.encode(sentences)
        ]

    def decode(self, rows: np.ndarray) -> list[str]:
        """[n, length] ids -> n strings, each cut at its first EOS (PADs dropped)."""
        out = []
        for row in np.asarray(rows).tolist():
            if EOS_ID in row:
                row = row[: row.index(EOS_ID)]
            out.append(self.processor.decode([t for t in row if t != PAD_ID]))
        return out
