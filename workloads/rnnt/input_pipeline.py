"""RNN-T inputs. The mini: multi-digit utterances made of Free Spoken Digit Dataset recordings.

FSDD (github.com/Jakobovski/free-spoken-digit-dataset, CC BY-SA 4.0): 3,000 wavs, 8 kHz mono
16-bit, named `{digit}_{speaker}_{index}.wav`, 6 speakers x 10 digits x 50 takes
(`python -m workloads.rnnt.download_fsdd --data_dir=DIR` fetches them). An utterance is
`digits_min`..`digits_max` random digits, each a random take of that digit, concatenated; its
transcript is the digit words ("four two seven"). Train utterances come from the train speakers
and are drawn afresh for every step (deterministic in seed and step); the eval set is a fixed
draw from the held-out speakers (`data.eval_speakers`), so the eval measures voices the model
never heard. Features: `workloads.rnnt.features` (the reference's log-mel pipeline at 8 kHz).
"""

from __future__ import annotations

import functools
import pathlib
import wave
from collections.abc import Iterator
from typing import Any

import ml_collections
import numpy as np

from tpubench.errors import UsageError
from tpubench.loops import feed as data_lib
from workloads.rnnt import features as features_lib
from workloads.rnnt import text

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
SPEAKERS = ("george", "jackson", "lucas", "nicolas", "theo", "yweweler")
EVAL_SEED = 20201201  # the fixed draw of the eval utterances


def feature_config(config: ml_collections.ConfigDict) -> features_lib.FeatureConfig:
    """The config's `data` feature keys as a `FeatureConfig`."""
    d = config.data
    return features_lib.FeatureConfig(
        sample_rate=int(d.sample_rate), window_size=float(d.window_size),
        window_stride=float(d.window_stride), n_fft=int(d.n_fft), features=int(d.features),
        frame_splicing=int(d.frame_splicing), dither=float(d.dither))


def fsdd_dir(config: ml_collections.ConfigDict) -> pathlib.Path:
    """DIR/fsdd/recordings for --config.data.dir=DIR."""
    return pathlib.Path(config.data.dir or ".") / "fsdd" / "recordings"


def check_fsdd(config: ml_collections.ConfigDict) -> None:
    """`UsageError` naming the download command unless the 3,000 recordings are there."""
    directory = fsdd_dir(config)
    count = len(list(directory.glob("*.wav"))) if directory.is_dir() else 0
    if count < 3000:
        raise UsageError(
            f"The Free Spoken Digit Dataset is missing or incomplete in {directory} ({count} of "
            "3,000 wav files). Fetch it with `python -m workloads.rnnt.download_fsdd "
            f"--data_dir={config.data.dir or 'DIR'}` and pass --config.data.dir=DIR (the folder "
            "that holds fsdd/recordings).")


def read_wav(path: pathlib.Path) -> np.ndarray:
    """A 16-bit mono wav as float32 in [-1, 1)."""
    with wave.open(str(path)) as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise UsageError(f"{path}: expected 16-bit mono PCM, as FSDD ships it.")
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768


@functools.lru_cache(maxsize=2)
def load_fsdd(directory: str, max_clip_samples: int) -> dict[str, list[list[np.ndarray]]]:
    """speaker -> digit -> that speaker's takes of the digit (index order), clips longer than
    `max_clip_samples` left out. Read once per process."""
    clips: dict[str, list[list[tuple[int, np.ndarray]]]] = {
        s: [[] for _ in WORDS] for s in SPEAKERS}
    for path in pathlib.Path(directory).glob("*.wav"):
        digit, speaker, index = path.stem.split("_")
        audio = read_wav(path)
        if speaker in clips and len(audio) <= max_clip_samples:
            clips[speaker][int(digit)].append((int(index), audio))
    return {s: [[a for _, a in sorted(takes, key=lambda t: t[0])] for takes in per_digit]
            for s, per_digit in clips.items()}


def _pools(config: ml_collections.ConfigDict, train: bool) -> list[list[np.ndarray]]:
    """digit -> every usable take of the train (or eval) speakers."""
    d = config.data
    clips = load_fsdd(str(fsdd_dir(config)), int(d.max_clip_samples))
    eval_speakers = tuple(d.eval_speakers)
    speakers = [s for s in SPEAKERS if (s in eval_speakers) != train]
    return [[a for s in speakers for a in clips[s][digit]] for digit in range(len(WORDS))]


def utterance(rng: np.random.Generator, pools: list[list[np.ndarray]], lo: int, hi: int
              ) -> tuple[np.ndarray, str]:
    """Random digits (count uniform in [lo, hi]), each a random take: (audio, transcript)."""
    digits = rng.integers(0, len(WORDS), size=int(rng.integers(lo, hi + 1)))
    takes = [pools[d][int(rng.integers(len(pools[d])))] for d in digits]
    return np.concatenate(takes), " ".join(WORDS[d] for d in digits)


def example(audio: np.ndarray, transcript: str, config: ml_collections.ConfigDict
            ) -> dict[str, np.ndarray]:
    """One padded example: features [max_frames, F], feature_lens, labels [max_label_len],
    label_lens. `UsageError` if the config's padding is too small for it."""
    d = config.data
    feats = features_lib.features(audio, feature_config(config))
    ids = text.encode(transcript)
    if len(feats) > d.max_frames or len(ids) > d.max_label_len:
        raise UsageError(
            f"An utterance of {len(feats)} frames and {len(ids)} labels does not fit "
            f"data.max_frames={d.max_frames} / data.max_label_len={d.max_label_len}; raise them.")
    padded = np.zeros((d.max_frames, feats.shape[1]), np.float32)
    padded[:len(feats)] = feats
    labels = np.zeros((d.max_label_len,), np.int32)
    labels[:len(ids)] = ids
    return {"features": padded, "feature_lens": np.int32(len(feats)), "labels": labels,
            "label_lens": np.int32(len(ids))}


def stack(examples: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """List of examples -> batch dict."""
    return {k: np.stack([e[k] for e in examples]) for k in examples[0]}


def fsdd_train(config: ml_collections.ConfigDict, start_step: int, process_index: int,
               process_count: int) -> Iterator[dict[str, Any]]:
    """This process's rows of every global train batch, drawn afresh per (seed, step)."""
    d = config.data
    pools = _pools(config, train=True)
    local = d.global_batch_size // process_count
    step = start_step
    while True:
        rng = np.random.default_rng([config.run.seed, step])
        rows = [utterance(rng, pools, d.digits_min, d.digits_max)
                for _ in range(d.global_batch_size)]
        mine = rows[process_index * local:(process_index + 1) * local]
        yield stack([example(a, t, config) for a, t in mine])
        step += 1


@functools.lru_cache(maxsize=4)
def _eval_arrays(config_json: str) -> dict[str, np.ndarray]:
    config = ml_collections.ConfigDict(__import__("json").loads(config_json))
    d = config.data
    pools = _pools(config, train=False)
    rng = np.random.default_rng(EVAL_SEED)
    rows = [utterance(rng, pools, d.digits_min, d.digits_max) for _ in range(config.eval.samples)]
    return stack([example(a, t, config) for a, t in rows])


def fsdd_eval_arrays(config: ml_collections.ConfigDict) -> dict[str, np.ndarray]:
    """The fixed eval set (held-out speakers), every example, in order."""
    return _eval_arrays(config.to_json())


def fsdd_eval(config: ml_collections.ConfigDict, process_index: int, process_count: int
              ) -> Iterator[dict[str, Any]]:
    """This process's eval batches, padded with mask 0."""
    return data_lib.in_memory_eval_batches(fsdd_eval_arrays(config), config.eval.batch_size,
                                           process_index, process_count)


def transcripts(config: ml_collections.ConfigDict) -> list[str]:
    """The eval set's reference transcripts, in order."""
    arrays = fsdd_eval_arrays(config)
    return text.decode_rows(arrays["labels"], arrays["label_lens"])
