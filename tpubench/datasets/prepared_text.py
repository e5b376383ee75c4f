"""The offline preparation of the translation data (`tpubench prepare transformer|gnmt ...`).

What the reference does before training (mlcommons/training v0.7
`translation/tensorflow/transformer/data_download.py`: download, build the vocabulary, encode
every pair), done once into a directory that every run of a result reads:

    vocab          the shared vocabulary (reference `vocab.ende.32768` format, or SentencePiece)
    train.npz      tokenized training pairs (flat ids + lengths) and the packed rows (pair indices)
    eval.npz       tokenized eval sources, untruncated
    eval_refs.txt  the raw eval references, one per line
    manifest.json  counts: pairs read / kept, packed rows (= train_samples), eval examples,
                   longest eval source, vocabulary size and origin

The directory name is a digest of every config key that changes the prepared data, so a run
finds exactly the preparation of its config. Packing is done here, once, with a fixed order
(pairs shuffled by `PACK_SEED`): an epoch is then exactly `train_rows` rows, which runs
reshuffle by (seed, epoch).
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
import tempfile
from collections.abc import Callable

import ml_collections
import numpy as np

from tpubench import paths
from tpubench.datasets import translation as ip
from tpubench.errors import UsageError
from tpubench.text import moses_bpe
from tpubench.text import subtokenizer as sub
from tpubench.text import tokenizer as spm_tok

MANIFEST = "manifest.json"
PACK_SEED = 0
FORMAT = 1
# Config keys that change the prepared data (the digest of their values names the directory),
# under the names they had before the config sections (issue 10.5), so the digests stay the same.
DATA_KEYS = {
    "data_source": "data.source", "tfds_train": "data.tfds_train",
    "tfds_train_subsets": "data.tfds_train_subsets", "tfds_train_split": "data.tfds_train_split",
    "tfds_eval": "data.tfds_eval", "eval_split": "data.eval_split",
    "source_lang": "data.source_lang", "target_lang": "data.target_lang",
    "lowercase": "data.lowercase", "tokenizer": "data.tokenizer", "vocab_size": "model.vocab_size",
    "vocab_file": "data.vocab_file", "vocab_min_count": "data.vocab_min_count",
    "vocab_file_byte_limit": "data.vocab_file_byte_limit",
    "tokenizer_max_chars": "data.tokenizer_max_chars", "max_len": "data.max_len",
}


# The keys only the GNMT reference's BPE vocabulary reads (`moses_bpe.py`): in the digest of a
# `data.tokenizer="bpe"` config only, so that the other configs' directories keep their names.
BPE_KEYS = {
    "num_merges": "data.num_merges", "vocab_pad_multiple": "data.vocab_pad_multiple",
    "clean_min_len": "data.clean_min_len", "clean_max_len": "data.clean_max_len",
}
TOKENIZERS = ("subword", "sentencepiece", "bpe")


# In the digest only when set to False, so that the packed configs' directories keep their names.
UNPACKED_KEYS = {"packing": "data.packing"}


def _data_keys(config: ml_collections.ConfigDict) -> dict[str, str]:
    keys = {**DATA_KEYS, **BPE_KEYS} if config.data.get("tokenizer") == "bpe" else DATA_KEYS
    return keys if config.data.get("packing", True) else {**keys, **UNPACKED_KEYS}


def _value(config: ml_collections.ConfigDict, path: str):
    section, key = path.split(".")
    value = config[section].get(key, None)
    return list(value) if isinstance(value, tuple | list) else value


def directory(config: ml_collections.ConfigDict) -> pathlib.Path:
    """Where this config's prepared data lives (`cache_dir/<workload>/prepared_<digest>`; GNMT
    prepares its sentence pairs with this module too)."""
    keys = {k: _value(config, path) for k, path in _data_keys(config).items()}
    if config.data.get("vocab_file"):
        keys["vocab_sha256"] = _sha256(config.data.vocab_file)
    digest = hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:12]
    root = pathlib.Path(config.data.get("cache_dir") or paths.cache_dir())
    return root / _workload(config) / f"prepared_{digest}"


def _workload(config: ml_collections.ConfigDict) -> str:
    return str(config.get("workload") or "transformer")


def _sha256(path: str) -> str:
    p = pathlib.Path(path)
    if not p.is_file():
        raise UsageError(
            f"--config.data.vocab_file={path} is not a file. Give the reference's vocab.ende.32768 "
            "(written by mlcommons/training translation/tensorflow/transformer/data_download.py) "
            "or leave vocab_file empty to build the vocabulary as the reference does.")
    return hashlib.sha256(p.read_bytes()).hexdigest()


def command(config: ml_collections.ConfigDict) -> str:
    """The command that prepares this config's data."""
    return (f"tpubench prepare {_workload(config)} "
            f"--config={config.get('config_name') or 'CONFIG'}")


def is_prepared(config: ml_collections.ConfigDict) -> bool:
    """Whether this config's data has been prepared (its manifest exists)."""
    try:
        return (directory(config) / MANIFEST).is_file()
    except UsageError:  # e.g. a vocab_file that does not exist
        return False


def manifest(config: ml_collections.ConfigDict) -> dict:
    """The manifest of this config's prepared data; `UsageError` naming the command if absent."""
    path = directory(config) / MANIFEST
    if not path.is_file():
        raise UsageError(
            f"The {_workload(config)} data for this config is not prepared (no {path}). Run "
            f"`{command(config)}` once, with the same --config.KEY=VALUE overrides as the run "
            "(it builds the vocabulary and tokenizes and packs the data offline, so that every "
            "run of a result sees the same data state), then start the run again.")
    return json.loads(path.read_text())


def tokenizer(config: ml_collections.ConfigDict):
    """The prepared vocabulary (reference subtokenizer, SentencePiece or Moses + BPE)."""
    d = directory(config)
    if config.data.tokenizer == "bpe":
        return moses_bpe.BpeTokenizer(d, int(config.data.num_merges))
    if config.data.tokenizer == "subword":
        return sub.Subtokenizer(d / "vocab")
    return spm_tok.Tokenizer(d / "vocab")


def _split(flat: np.ndarray, lens: np.ndarray) -> list[np.ndarray]:
    return np.split(flat, np.cumsum(lens)[:-1]) if len(lens) else []


def load_train(config: ml_collections.ConfigDict) -> tuple[list[np.ndarray], list[np.ndarray],
                                                            list[np.ndarray]]:
    """(sources, targets, rows): tokenized pairs and the packed rows as pair-index arrays."""
    with np.load(directory(config) / "train.npz") as f:
        return (_split(f["sources"], f["source_lens"]), _split(f["targets"], f["target_lens"]),
                _split(f["rows"], f["row_lens"]))


def load_eval(config: ml_collections.ConfigDict) -> tuple[list[np.ndarray], list[str]]:
    """(tokenized eval sources, raw references)."""
    d = directory(config)
    with np.load(d / "eval.npz") as f:
        sources = _split(f["sources"], f["source_lens"])
    refs = (d / "eval_refs.txt").read_text(encoding="utf-8").split("\n")[:-1]
    return sources, refs


# ---- building it ---------------------------------------------------------------------------
TextPairs = list[tuple[str, str]]


def _norm(text: str, lowercase: bool) -> str:
    return text.lower() if lowercase else text


def build_vocab(config: ml_collections.ConfigDict, files: list[list[str]], out: pathlib.Path
                ) -> dict:
    """Write `out/vocab`; `files` are the training "files" (one list of lines per corpus and
    language, in the reference's order: every source file, then every target file)."""
    c = config
    if c.data.tokenizer == "subword":
        if c.data.get("vocab_file"):
            shutil.copyfile(c.data.vocab_file, out / "vocab")
            return {"vocab_origin": "file", "vocab_sha256": _sha256(c.data.vocab_file)}
        counts: dict[str, int] = {}
        for lines in files:  # data_download.py: ~1 MB sample of each file, min_count 6
            size = sum(len(line.encode("utf-8")) + 1 for line in lines)
            for token, n in sub.count_tokens(
                    sub.sample_lines(lines, size, c.data.vocab_file_byte_limit)).items():
                counts[token] = counts.get(token, 0) + n
        sub.save(sub.build(counts, c.data.vocab_min_count), out / "vocab")
        return {"vocab_origin": "built", "vocab_min_count": int(c.data.vocab_min_count)}
    if c.data.tokenizer == "sentencepiece":
        sentences = (_norm(s, c.data.lowercase) for lines in files for s in lines)
        spm_tok.train(sentences, c.model.vocab_size, out / "vocab", c.data.tokenizer_max_chars)
        return {"vocab_origin": "sentencepiece"}
    raise UsageError(f"unknown data.tokenizer {c.data.tokenizer!r}; use one of "
                     f"{', '.join(TOKENIZERS)}.")


def pack_order(n_kept: int) -> np.ndarray:
    """The fixed order in which the kept pairs are packed."""
    return np.random.default_rng(PACK_SEED).permutation(n_kept)


def prepare(config: ml_collections.ConfigDict, read_train: Callable[[], list[TextPairs]],
            read_eval: Callable[[], TextPairs]) -> pathlib.Path:
    """Write this config's prepared data (kept when already complete); returns its directory.

    `read_train()` returns the training pairs per corpus (the reference's files), `read_eval()`
    the eval pairs.
    """
    c = config
    final = directory(c)
    if (final / MANIFEST).is_file():
        return final
    if c.data.tokenizer == "bpe":
        moses_bpe.check_config(c)  # before any corpus is read or downloaded
    elif c.data.tokenizer not in TOKENIZERS:
        raise UsageError(f"unknown data.tokenizer {c.data.tokenizer!r}; use one of "
                         f"{', '.join(TOKENIZERS)}.")
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent, ignore_cleanup_errors=True) as tmp:
        out = pathlib.Path(tmp)
        corpora = read_train()
        text = [p for pairs in corpora for p in pairs]
        if c.data.tokenizer == "bpe":  # the GNMT reference's: Moses, clean, joint BPE
            tok, sources, targets, info = moses_bpe.build(c, corpora, out)
            pairs = ip.Pairs(sources, targets, [])
        else:
            files = [[s for s, _ in pairs] for pairs in corpora]
            files += [[t for _, t in pairs] for pairs in corpora]
            info = build_vocab(c, files, out)
            tok = sub.Subtokenizer(out / "vocab") if c.data.tokenizer == "subword" else \
                spm_tok.Tokenizer(out / "vocab")
            pairs = ip.tokenize_pairs(tok, text, c.data.lowercase)
        if tok.vocab_size > c.model.vocab_size:
            raise UsageError(
                f"The vocabulary has {tok.vocab_size} subtokens, more than the model's "
                f"vocab_size={c.model.vocab_size}; raise --config.model.vocab_size.")
        kept = ip.keep_indices(pairs, c.data.max_len)
        rows = ip.pack_rows(pairs, kept[pack_order(len(kept))], c.data.max_len,
                            bool(c.data.get("packing", True)))
        np.savez(
            out / "train.npz",
            sources=_flat(pairs.sources), source_lens=[len(x) for x in pairs.sources],
            targets=_flat(pairs.targets), target_lens=[len(x) for x in pairs.targets],
            rows=_flat([np.asarray(r, np.int64) for r in rows]),
            row_lens=[len(r) for r in rows],
        )
        eval_text = read_eval()
        if c.data.tokenizer == "bpe":  # the test set is tokenized and BPE'd, never cleaned
            eval_pairs = ip.Pairs(moses_bpe_sources(c, tok, eval_text), [],
                                  [t for _, t in eval_text])
        else:
            eval_pairs = ip.tokenize_pairs(tok, eval_text, c.data.lowercase)
        np.savez(out / "eval.npz", sources=_flat(eval_pairs.sources),
                 source_lens=[len(x) for x in eval_pairs.sources])
        refs = [r.replace("\n", " ") for r in eval_pairs.references]
        (out / "eval_refs.txt").write_text("".join(r + "\n" for r in refs), encoding="utf-8")
        meta = {
            "format": FORMAT,
            "config": {k: _value(c, path) for k, path in _data_keys(c).items()},
            "train_corpus_pairs": [len(p) for p in corpora],
            "train_pairs": len(text),
            "train_pairs_kept": len(kept),
            "train_rows": len(rows),
            "eval_examples": len(eval_text),
            "max_eval_source_len": max((len(s) for s in eval_pairs.sources), default=0),
            "vocab_size": tok.vocab_size,
            **info,
        }
        (out / MANIFEST).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        try:
            out.rename(final)  # atomic: a run never sees half-prepared data
        except OSError:  # another process finished the same preparation first
            if not (final / MANIFEST).is_file():
                raise
    return final


def moses_bpe_sources(config: ml_collections.ConfigDict, tok, pairs: TextPairs
                      ) -> list[np.ndarray]:
    """The eval sources through the BPE tokenizer (lowercased if the config says so)."""
    d = config.data
    sources = [s.lower() if d.lowercase else s for s, _ in pairs]
    return tok.encode(sources, d.source_lang, moses_bpe.num_workers(config))


def _flat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int32) if arrays else np.zeros([0], np.int32)
