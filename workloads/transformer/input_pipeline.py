"""Translation data: sentence pairs from Multi30k files or tfds WMT, the shared subword vocabulary,
packed fixed-length training rows, and padded eval batches.

Training: pairs whose source or target (with EOS) exceed `max_len` are discarded; each epoch the
pairs are shuffled by (seed, epoch) and packed greedily into rows of `max_len` source and
`max_len` target tokens (a pair starts a new row when either side would overflow). A "sample" is a
packed row, as in Google's v0.7 JAX submission. Batches are a pure function of (seed, step).
"""

from __future__ import annotations

import dataclasses
import gzip
import pathlib
from collections.abc import Callable, Iterator, Sequence

import ml_collections
import numpy as np

from tpubench.errors import UsageError
from workloads.transformer import tokenizer as tok

MULTI30K_SPLITS = {"train": "train", "val": "val", "test": "test_2016_flickr"}
MULTI30K_COMMAND = "python -m workloads.transformer.download_multi30k --data_dir={}"
PACKED_KEYS = ("inputs", "targets")


@dataclasses.dataclass
class Pairs:
    """Tokenized sentence pairs (ids end in EOS) and the raw target sentences."""

    sources: list[np.ndarray]
    targets: list[np.ndarray]
    references: list[str]


# ---- reading raw text ------------------------------------------------------------------------
def multi30k_dir(data_dir: str) -> pathlib.Path:
    """Multi30k lives in `<data_dir>/multi30k/`."""
    return pathlib.Path(data_dir) / "multi30k"


def multi30k_files(data_dir: str, split: str, lang: str) -> pathlib.Path:
    """Path of one Multi30k split/language file ("train", "val", "test"; "de", "en")."""
    return multi30k_dir(data_dir) / f"{MULTI30K_SPLITS[split]}.{lang}.gz"


def check_multi30k(data_dir: str, langs: Sequence[str], splits: Sequence[str]) -> None:
    """`UsageError` with the download command if any needed Multi30k file is missing."""
    if not data_dir:
        raise UsageError(
            "Multi30k needs a data directory: set TPUBENCH_DATA_DIR or --config.data_dir, "
            "after downloading it with " + MULTI30K_COMMAND.format("DIR") + "."
        )
    missing = [
        str(multi30k_files(data_dir, s, lang)) for s in splits for lang in langs
        if not multi30k_files(data_dir, s, lang).exists()
    ]
    if missing:
        raise UsageError(
            f"Multi30k files are missing: {', '.join(missing)}. Download them with "
            + MULTI30K_COMMAND.format(data_dir)
        )


def read_multi30k(data_dir: str, split: str, lang: str) -> list[str]:
    """One sentence per line, aligned across languages."""
    with gzip.open(multi30k_files(data_dir, split, lang), "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def tfds_text(
    config: ml_collections.ConfigDict, name: str, split: str
) -> Iterator[tuple[str, str]]:
    """(source, target) sentences of a tfds translation dataset, in file order."""
    import tensorflow_datasets as tfds

    ds = tfds.load(
        name, split=split, data_dir=config.get("tfds_data_dir") or None, shuffle_files=False
    )
    for ex in tfds.as_numpy(ds):
        yield ex[config.source_lang].decode("utf-8"), ex[config.target_lang].decode("utf-8")


TextPairs = list[tuple[str, str]]


def raw_pairs(config: ml_collections.ConfigDict, train: bool) -> Callable[[], TextPairs]:
    """A thunk reading the configured train or eval (source, target) sentences."""
    c = config
    if c.data_source == "multi30k":
        split = "train" if train else c.eval_split

        def read() -> list[tuple[str, str]]:
            return list(zip(
                read_multi30k(c.data_dir, split, c.source_lang),
                read_multi30k(c.data_dir, split, c.target_lang), strict=True,
            ))
        return read
    if c.data_source == "tfds":
        name, split = (c.tfds_train, c.tfds_train_split) if train else (c.tfds_eval, c.eval_split)
        return lambda: list(tfds_text(c, name, split))
    raise UsageError(f"transformer: data_source {c.data_source!r} has no sentence pairs.")


# ---- the vocabulary and tokenized pairs ------------------------------------------------------
def _norm(text: str, lowercase: bool) -> str:
    return text.lower() if lowercase else text


def get_tokenizer(
    config: ml_collections.ConfigDict, train_pairs: Callable[[], TextPairs] | None = None
) -> tok.Tokenizer:
    """The shared vocabulary of this config's training text (trained and cached on first use)."""
    c = config
    dataset = c.tfds_train if c.data_source == "tfds" else c.data_source
    key = f"{dataset}|{c.source_lang}-{c.target_lang}|lower={c.lowercase}|{c.tokenizer_max_chars}"
    train_pairs = train_pairs or raw_pairs(c, train=True)

    def sentences() -> Iterator[str]:
        for src, tgt in train_pairs():
            yield _norm(src, c.lowercase)
            yield _norm(tgt, c.lowercase)

    return tok.load_or_train(sentences, key, c.vocab_size, c.cache_dir, c.tokenizer_max_chars)


def tokenize_pairs(
    tokenizer: tok.Tokenizer, pairs: list[tuple[str, str]], lowercase: bool
) -> Pairs:
    """Encode both sides of every pair (references keep the raw target text)."""
    sources = tokenizer.encode([_norm(s, lowercase) for s, _ in pairs])
    targets = tokenizer.encode([_norm(t, lowercase) for _, t in pairs])
    return Pairs(sources, targets, [t for _, t in pairs])


def cached_train_pairs(
    config: ml_collections.ConfigDict, tokenizer: tok.Tokenizer,
    text: Callable[[], TextPairs],
) -> Pairs:
    """The tokenized training pairs, cached beside the tokenizer (WMT has ~5.9M pairs: encode
    them once, then every later run loads two flat arrays)."""
    path = pathlib.Path(str(tokenizer.path).removesuffix(".model") + "_train_ids.npz")
    if not path.exists():
        pairs = tokenize_pairs(tokenizer, text(), config.lowercase)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(
            tmp, sources=np.concatenate(pairs.sources), targets=np.concatenate(pairs.targets),
            source_lens=[len(x) for x in pairs.sources],
            target_lens=[len(x) for x in pairs.targets],
        )
        tmp.replace(path)
        return pairs
    with np.load(path) as f:
        split = lambda flat, lens: np.split(flat, np.cumsum(lens)[:-1])  # noqa: E731
        return Pairs(split(f["sources"], f["source_lens"]), split(f["targets"], f["target_lens"]),
                     [])


# ---- packing ---------------------------------------------------------------------------------
def pack_rows(pairs: Pairs, order: np.ndarray, max_len: int) -> list[list[int]]:
    """Greedy packing: lists of pair indices, each list fitting `max_len` on both sides."""
    rows: list[list[int]] = []
    row: list[int] = []
    used_src = used_tgt = 0
    for i in order.tolist():
        n_src, n_tgt = len(pairs.sources[i]), len(pairs.targets[i])
        if row and (used_src + n_src > max_len or used_tgt + n_tgt > max_len):
            rows.append(row)
            row, used_src, used_tgt = [], 0, 0
        row.append(i)
        used_src += n_src
        used_tgt += n_tgt
    if row:
        rows.append(row)
    return rows


def build_packed(pairs: Pairs, rows: Sequence[list[int]], max_len: int) -> dict[str, np.ndarray]:
    """[len(rows), max_len] arrays: inputs/targets with *_position and *_segmentation."""
    n = len(rows)
    out = {
        f"{k}{suffix}": np.zeros((n, max_len), np.int32)
        for k in PACKED_KEYS for suffix in ("", "_position", "_segmentation")
    }
    for r, row in enumerate(rows):
        for key, seqs in (("inputs", pairs.sources), ("targets", pairs.targets)):
            at = 0
            for seg, i in enumerate(row, start=1):
                ids = seqs[i]
                out[key][r, at : at + len(ids)] = ids
                out[f"{key}_position"][r, at : at + len(ids)] = np.arange(len(ids))
                out[f"{key}_segmentation"][r, at : at + len(ids)] = seg
                at += len(ids)
    return out


def keep_indices(pairs: Pairs, max_len: int) -> np.ndarray:
    """Indices of the pairs that fit `max_len` on both sides (the rest are discarded)."""
    return np.array([
        i for i in range(len(pairs.sources))
        if 1 < len(pairs.sources[i]) <= max_len and 1 < len(pairs.targets[i]) <= max_len
    ], np.int64)


def epoch_rows(
    pairs: Pairs, kept: np.ndarray, seed: int, epoch: int, max_len: int
) -> list[list[int]]:
    """The packed rows of one epoch: kept pairs shuffled by (seed, epoch), then packed."""
    order = np.random.default_rng([seed, epoch]).permutation(kept)
    return pack_rows(pairs, order, max_len)


def train_batches(
    pairs: Pairs, config: ml_collections.ConfigDict, start_step: int,
    process_index: int, process_count: int,
) -> Iterator[dict[str, np.ndarray]]:
    """This process's slice of every global batch from `start_step` on, epoch after epoch
    (each epoch's last partial batch is dropped)."""
    c = config
    gbs, local = c.global_batch_size, c.global_batch_size // process_count
    kept = keep_indices(pairs, c.max_len)
    step, epoch = 0, 0
    while True:
        rows = epoch_rows(pairs, kept, c.seed, epoch, c.max_len)
        n_batches = len(rows) // gbs
        if n_batches == 0:
            raise UsageError(
                f"An epoch packs into {len(rows)} rows, fewer than global_batch_size={gbs}."
            )
        for b in range(n_batches):
            if step >= start_step:
                first = b * gbs + process_index * local
                yield build_packed(pairs, rows[first : first + local], c.max_len)
            step += 1
        epoch += 1


def eval_batches(
    pairs: Pairs, eval_batch_size: int, max_len: int, process_index: int, process_count: int
) -> Iterator[dict[str, np.ndarray]]:
    """Padded eval batches: inputs (truncated to `max_len`, EOS kept), example_id, mask."""
    local = eval_batch_size // process_count
    n = len(pairs.sources)
    for start in range(0, n, eval_batch_size):
        ids = np.arange(start + process_index * local, start + (process_index + 1) * local)
        inputs = np.zeros((local, max_len), np.int32)
        mask = (ids < n).astype(np.float32)
        for r, i in enumerate(ids[ids < n]):
            src = pairs.sources[i]
            if len(src) > max_len:
                src = np.concatenate([src[: max_len - 1], src[-1:]])
            inputs[r, : len(src)] = src
        yield {"inputs": inputs, "example_id": np.where(ids < n, ids, 0).astype(np.int32),
               "mask": mask}
