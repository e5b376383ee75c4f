"""LibriSpeech through tensorflow-datasets (`librispeech`, 16 kHz): the full config's data.

Eval: dev-clean restricted to utterances of at most 15 s, as the reference's QSL keeps them
(speech_recognition/rnnt: AudioQSL over dev-clean with max_duration 15 s; 2,513 of 2,703
utterances, ../shared/docs/WORKLOADS.md). Features: `workloads.rnnt.features` (the reference's
pipeline), computed on the host per utterance; transcripts lower-cased to the 28 labels.
Train (for completeness; the inference benchmark has no training reference): the three train
splits, shuffled, utterances longer than `data.max_frames` frames dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ml_collections
import numpy as np

from tpubench import sources
from tpubench.errors import UsageError
from tpubench.loops import feed as data_lib
from workloads.rnnt import input_pipeline

MAX_EVAL_SECONDS = 15.0
SAMPLE_RATE = 16000


def check(config: ml_collections.ConfigDict) -> Any:
    """The tfds builder, or a `UsageError` saying how to prepare LibriSpeech."""
    return sources.tfds_builder(
        config, "Run `tfds build librispeech --data_dir=DATA_DIR` (about 60 GB of downloads)")


def keep_for_eval(num_samples: int) -> bool:
    """The reference's duration filter: at most 15 s."""
    return num_samples <= MAX_EVAL_SECONDS * SAMPLE_RATE


def eval_examples(config: ml_collections.ConfigDict) -> Iterator[dict[str, np.ndarray]]:
    """Every kept dev-clean utterance, padded, in tfds order."""
    import tensorflow_datasets as tfds

    ds = check(config).as_dataset(split=config.data.eval_split)
    for ex in tfds.as_numpy(ds):
        speech = np.asarray(ex["speech"])
        if not keep_for_eval(len(speech)):
            continue
        audio = speech.astype(np.float32) / 32768.0
        yield input_pipeline.example(audio, ex["text"].decode("utf-8"), config)


def eval_arrays(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
    """The whole eval set as arrays."""
    return input_pipeline.stack(list(eval_examples(config)))


def eval_batches(config: ml_collections.ConfigDict, process_index: int, process_count: int
                 ) -> Iterator[dict[str, np.ndarray]]:
    """This process's eval batches, padded with mask 0."""
    return data_lib.in_memory_eval_batches(eval_arrays(config), config.eval.batch_size,
                                           process_index, process_count)


def train_batches(config: ml_collections.ConfigDict, start_step: int, process_index: int,
                  process_count: int) -> Iterator[dict[str, np.ndarray]]:
    """This process's rows of each global batch from the shuffled train splits."""
    import tensorflow_datasets as tfds

    d = config.data
    split = tfds.split_for_jax_process(d.train_split, process_index=process_index,
                                       process_count=process_count)
    ds = check(config).as_dataset(split=split, shuffle_files=True,
                                  read_config=tfds.ReadConfig(shuffle_seed=config.run.seed))
    local = d.global_batch_size // process_count
    rows: list[dict[str, np.ndarray]] = []
    skip = start_step * local
    for ex in tfds.as_numpy(ds.repeat()):
        audio = np.asarray(ex["speech"]).astype(np.float32) / 32768.0
        try:
            row = input_pipeline.example(audio, ex["text"].decode("utf-8"), config)
        except UsageError:
            continue  # longer than data.max_frames / max_label_len: dropped
        if skip:
            skip -= 1
            continue
        rows.append(row)
        if len(rows) == local:
            yield input_pipeline.stack(rows)
            rows = []
