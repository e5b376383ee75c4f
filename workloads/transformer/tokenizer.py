"""The shared source/target subword vocabulary: a SentencePiece model trained once from the
training text and cached on disk (a preprocessing artifact, as the reference's vocab file is).

Ids: 0 = PAD (also the decoder start token), 1 = EOS, 2 = UNK; no BOS.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import tempfile
from collections.abc import Iterable

import numpy as np
import sentencepiece as spm

from workloads.transformer.model import EOS_ID, PAD_ID

UNK_ID = 2
MODEL_TYPE = "bpe"  # trains in seconds where unigram takes ~10x longer; part of the cache key


def default_cache_dir() -> str:
    """`$TPUBENCH_CACHE_DIR` or `~/.cache/tpubench`."""
    return os.environ.get("TPUBENCH_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "tpubench"
    )


def cache_path(cache_dir: str, key: str, vocab_size: int) -> pathlib.Path:
    """Where the model for `key` (what it was trained on) and `vocab_size` lives."""
    digest = hashlib.sha256(f"{key}|{vocab_size}|{MODEL_TYPE}".encode()).hexdigest()[:12]
    return pathlib.Path(cache_dir or default_cache_dir()) / "transformer" / f"spm_{digest}.model"


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


def load_or_train(
    sentences: Iterable[str] | None, key: str, vocab_size: int, cache_dir: str,
    max_chars: int = 10**7,
) -> Tokenizer:
    """The cached tokenizer for `key`, training it from `sentences` on first use.

    `sentences` may be a zero-argument callable returning the iterable, so that the corpus is
    only read when the model is not cached yet.
    """
    path = cache_path(cache_dir, key, vocab_size)
    if not path.exists():
        text = sentences() if callable(sentences) else sentences
        train(text, vocab_size, path, max_chars)
    return Tokenizer(path)
