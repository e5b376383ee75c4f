"""Host-side input for the MLPerf BERT TFRecords (tf.data).

MLPerf v0.7 BERT records (made by the reference's `create_pretraining_data.py`) hold, per
example, `input_ids`, `input_mask`, `segment_ids` [max_seq_length], `masked_lm_positions`,
`masked_lm_ids`, `masked_lm_weights` [max_predictions_per_seq] and `next_sentence_labels` [1],
all int64 except the float32 weights. Batches leave here as int32/float32 numpy dicts.
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


def _parse_fn(seq_len: int, max_predictions: int):
    import tensorflow as tf

    features = {
        **{k: tf.io.FixedLenFeature([seq_len], tf.int64) for k in INT_FEATURES},
        **{k: tf.io.FixedLenFeature([max_predictions], tf.int64) for k in PREDICTION_FEATURES},
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }

    def parse(serialized):
        ex = tf.io.parse_example(serialized, features)
        out = {k: tf.cast(v, tf.int32) for k, v in ex.items() if k != "masked_lm_weights"}
        out["next_sentence_labels"] = out["next_sentence_labels"][..., 0]
        out["masked_lm_weights"] = ex["masked_lm_weights"]
        return out

    return parse


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
    ds = ds.map(_parse_fn(seq_len, max_predictions), num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True)
    ds = ds.skip(start_step).prefetch(tf.data.AUTOTUNE)
    return ds.as_numpy_iterator()


def read_tfrecords(files: list[str], seq_len: int, max_predictions: int) -> Batch:
    """Every example of `files`, in file order, as one dict of numpy arrays (the eval set)."""
    import tensorflow as tf

    ds = tf.data.TFRecordDataset(files).batch(4096).map(_parse_fn(seq_len, max_predictions))
    parts = list(ds.as_numpy_iterator())
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
