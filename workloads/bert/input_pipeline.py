"""Host-side input for the MLPerf BERT TFRecords (tf.data).

MLPerf v0.7 BERT records (made by the reference's `create_pretraining_data.py`) hold, per
example, `input_ids`, `input_mask`, `segment_ids` [max_seq_length], `masked_lm_positions`,
`masked_lm_ids`, `masked_lm_weights` [max_predictions_per_seq] and `next_sentence_labels` [1],
all int64 except the float32 weights. Packed records (`packing.py`, written by
`python -m workloads.bert.pack_records`) add `position_ids` [max_seq_length] and
`next_sentence_positions`, `next_sentence_weights` [examples per row], and hold
`next_sentence_labels` per example. Batches leave here as int32/float32 numpy dicts.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator

import numpy as np

Batch = dict[str, np.ndarray]

INT_FEATURES = ("input_ids", "input_mask", "segment_ids")
PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids")


def record_files(data_dir: str, pattern: str) -> list[str]:
    """The record files matching `pattern` under `data_dir`, sorted (a fixed order)."""
    return sorted(glob.glob(os.path.join(data_dir, pattern)))


def _parse_fn(seq_len: int, max_predictions: int, per_row: int = 0):
    """Parses a batch of records; `per_row` > 0: packed records of up to that many examples."""
    import tensorflow as tf

    features = {
        **{k: tf.io.FixedLenFeature([seq_len], tf.int64) for k in INT_FEATURES},
        **{k: tf.io.FixedLenFeature([max_predictions], tf.int64) for k in PREDICTION_FEATURES},
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([max(per_row, 1)], tf.int64),
    }
    if per_row:
        features.update({
            "position_ids": tf.io.FixedLenFeature([seq_len], tf.int64),
            "next_sentence_positions": tf.io.FixedLenFeature([per_row], tf.int64),
            "next_sentence_weights": tf.io.FixedLenFeature([per_row], tf.float32),
        })
    floats = ("masked_lm_weights", "next_sentence_weights")

    def parse(serialized):
        ex = tf.io.parse_example(serialized, features)
        out = {k: v if k in floats else tf.cast(v, tf.int32) for k, v in ex.items()}
        if not per_row:
            out["next_sentence_labels"] = out["next_sentence_labels"][..., 0]
        return out

    return parse


def write_tfrecords(path: str, examples: Batch) -> None:
    """`examples` (numpy arrays with a leading example axis) as one TFRecord file, one
    tf.train.Example per row: float arrays as float lists, the rest as int64 lists."""
    import tensorflow as tf

    with tf.io.TFRecordWriter(path) as writer:
        for i in range(len(next(iter(examples.values())))):
            feature = {}
            for k, v in examples.items():
                row = np.atleast_1d(v[i])
                feature[k] = tf.train.Feature(float_list=tf.train.FloatList(value=row.tolist())) \
                    if row.dtype.kind == "f" else \
                    tf.train.Feature(int64_list=tf.train.Int64List(value=row.tolist()))
            writer.write(tf.train.Example(
                features=tf.train.Features(feature=feature)).SerializeToString())


def record_keys(path: str) -> set[str]:
    """The feature names of the first record of `path`."""
    import tensorflow as tf

    for raw in tf.data.TFRecordDataset([path]).take(1).as_numpy_iterator():
        return set(tf.train.Example.FromString(raw).features.feature)
    return set()


def tfrecord_train_batches(
    files: list[str],
    batch_size: int,
    seq_len: int,
    max_predictions: int,
    seed: int,
    start_step: int,
    process_index: int = 0,
    process_count: int = 1,
    shuffle_buffer_size: int = 10_000,
    per_row: int = 0,
) -> Iterator[Batch]:
    """Endless training batches of `batch_size` examples for this process.

    Each process reads its own share of the files (or of the records, when there are fewer
    files than processes) in a seed-fixed shuffled order; the pipeline is deterministic in
    `seed`, so resuming at `start_step` skips exactly the batches already consumed.
    """
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(files)
    if len(files) >= process_count:
        ds = ds.shard(process_count, process_index)
    ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(
        tf.data.TFRecordDataset, cycle_length=min(8, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True,
    )
    if len(files) < process_count:
        ds = ds.shard(process_count, process_index)
    ds = ds.shuffle(shuffle_buffer_size, seed=seed + 1)
    ds = ds.batch(batch_size, drop_remainder=True)
    ds = ds.map(_parse_fn(seq_len, max_predictions, per_row), num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True)
    ds = ds.skip(start_step).prefetch(tf.data.AUTOTUNE)
    return ds.as_numpy_iterator()


def read_tfrecords(files: list[str], seq_len: int, max_predictions: int,
                   per_row: int = 0) -> Batch:
    """Every record of `files`, in file order, as one dict of numpy arrays (the eval set)."""
    import tensorflow as tf

    ds = tf.data.TFRecordDataset(files).batch(4096).map(
        _parse_fn(seq_len, max_predictions, per_row))
    parts = list(ds.as_numpy_iterator())
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
