"""Translation data: sentence pairs from Multi30k files or tfds WMT, their tokenization, the
greedy packing of pairs into fixed-length rows (done once by `prepared_text.py`) and padded eval
batches; shared by the translation workloads (Transformer, GNMT) and BERT's Multi30k minis.

Training pairs whose source or target (with EOS) exceed `max_len` are discarded (`keep_indices`);
the kept pairs are packed greedily into rows of `max_len` source and `max_len` target tokens (a
pair starts a new row when either side would overflow).

WMT (full config): the reference's three training corpora (mlcommons/training v0.7
`translation/tensorflow/transformer/data_download.py`: news-commentary-v12, commoncrawl,
europarl-v7, in that order), each read through its own `tfds.translate.wmt.WmtConfig` so that
the vocabulary can sample each corpus file as the reference does; no rapid_2016.
"""

from __future__ import annotations

import dataclasses
import gzip
import pathlib
from collections.abc import Iterator, Sequence

import ml_collections
import numpy as np

from tpubench.errors import UsageError

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
            "Multi30k needs a data directory: set TPUBENCH_DATA_DIR or --config.data.dir, "
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


def wmt_builder(config: ml_collections.ConfigDict, subset: str):
    """The tfds builder of one WMT training corpus (`wmt_translate` with a custom config)."""
    import tensorflow_datasets as tfds
    from tensorflow_datasets.translate import wmt

    wmt_config = wmt.WmtConfig(
        version="1.0.0", language_pair=("de", "en"), subsets={tfds.Split.TRAIN: [subset]},
        name=subset, description=f"WMT17 {subset} de-en (MLPerf v0.7 Transformer corpus)",
    )
    return tfds.builder("wmt_translate", config=wmt_config,
                        data_dir=config.data.get("dir") or None)


def _tfds_pairs(config: ml_collections.ConfigDict, ds) -> TextPairs:
    import tensorflow_datasets as tfds

    d = config.data
    return [(ex[d.source_lang].decode("utf-8"), ex[d.target_lang].decode("utf-8"))
            for ex in tfds.as_numpy(ds)]


TextPairs = list[tuple[str, str]]


def read_train_corpora(config: ml_collections.ConfigDict) -> list[TextPairs]:
    """The training (source, target) pairs, one list per corpus (downloads WMT if needed)."""
    c = config
    if c.data.source == "multi30k":
        return [list(zip(read_multi30k(c.data.dir, "train", c.data.source_lang),
                         read_multi30k(c.data.dir, "train", c.data.target_lang), strict=True))]
    if c.data.source == "tfds":
        corpora = []
        for subset in c.data.tfds_train_subsets:
            builder = wmt_builder(c, subset)
            builder.download_and_prepare()
            corpora.append(_tfds_pairs(c, builder.as_dataset(
                split=c.data.tfds_train_split, shuffle_files=False)))
        return corpora
    raise UsageError(f"transformer: data_source {c.data.source!r} has no sentence pairs.")


def read_eval(config: ml_collections.ConfigDict) -> TextPairs:
    """The eval (source, target) pairs (newstest2014 for the full config)."""
    c = config
    if c.data.source == "multi30k":
        return list(zip(read_multi30k(c.data.dir, c.data.eval_split, c.data.source_lang),
                        read_multi30k(c.data.dir, c.data.eval_split, c.data.target_lang),
                        strict=True))
    if c.data.source == "tfds":
        import tensorflow_datasets as tfds

        builder = tfds.builder(c.data.tfds_eval, data_dir=c.data.get("dir") or None)
        builder.download_and_prepare()
        return _tfds_pairs(c, builder.as_dataset(split=c.data.eval_split, shuffle_files=False))
    raise UsageError(f"transformer: data_source {c.data.source!r} has no sentence pairs.")


def _norm(text: str, lowercase: bool) -> str:
    return text.lower() if lowercase else text


def tokenize_pairs(tokenizer, pairs: TextPairs, lowercase: bool) -> Pairs:
    """Encode both sides of every pair (references keep the raw target text)."""
    sources = tokenizer.encode([_norm(s, lowercase) for s, _ in pairs])
    targets = tokenizer.encode([_norm(t, lowercase) for _, t in pairs])
    return Pairs(sources, targets, [t for _, t in pairs])


# ---- packing ---------------------------------------------------------------------------------
def pack_rows(pairs: Pairs, order: np.ndarray, max_len: int, packing: bool = True
              ) -> list[list[int]]:
    """Greedy packing: lists of pair indices, each list fitting `max_len` on both sides; with
    `packing=False`, one pair per row (the rest of the row is padding)."""
    rows: list[list[int]] = []
    row: list[int] = []
    used_src = used_tgt = 0
    for i in order.tolist():
        n_src, n_tgt = len(pairs.sources[i]), len(pairs.targets[i])
        if row and (used_src + n_src > max_len or used_tgt + n_tgt > max_len or not packing):
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


def eval_batches(
    sources: Sequence[np.ndarray], eval_batch_size: int, max_len: int, process_index: int,
    process_count: int,
) -> Iterator[dict[str, np.ndarray]]:
    """Padded eval batches: inputs (never truncated), example_id, mask."""
    longest = max((len(s) for s in sources), default=0)
    if longest > max_len:
        raise UsageError(
            f"An eval source has {longest} tokens, more than max_eval_input_len={max_len}; eval "
            "inputs are never truncated. Set --config.data.max_eval_input_len=0 (the longest "
            "prepared eval source) or a larger value.")
    local = eval_batch_size // process_count
    n = len(sources)
    for start in range(0, n, eval_batch_size):
        ids = np.arange(start + process_index * local, start + (process_index + 1) * local)
        inputs = np.zeros((local, max_len), np.int32)
        mask = (ids < n).astype(np.float32)
        for r, i in enumerate(ids[ids < n]):
            inputs[r, : len(sources[i])] = sources[i]
        yield {"inputs": inputs, "example_id": np.where(ids < n, ids, 0).astype(np.int32),
               "mask": mask}
