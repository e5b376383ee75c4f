"""Log-mel filterbank features exactly as the MLPerf Inference v0.7 RNN-T reference computes them.

Reference: mlcommons/inference speech_recognition/rnnt/pytorch/parts/features.py
(`FilterbankFeatures.forward`) with the `[input_eval]` section of
speech_recognition/rnnt/pytorch/configs/rnnt.toml: sample_rate 16000, window_size 0.02 s
(320 samples), window_stride 0.01 s (160 samples), window "hann" (torch, periodic=False),
n_fft 512, features 80, frame_splicing 3, normalize "per_feature", dither 0.00001, feat_type
"logfbank". The pipeline, step by step:

1. pre-emphasis 0.97 (`FilterbankFeatures.__init__`'s default; `from_config` does not pass it);
2. STFT, centered (reflect padding of n_fft // 2), the window zero-padded to n_fft in the middle
   (torch.stft), power spectrum |X|^2;
3. + dither^2: the reference's "deterministic dithering" (`use_deterministic_dithering = True`),
   a constant 1e-10 on the power; the random dither is never drawn, at train or eval;
4. the Slaney mel filterbank of librosa.filters.mel (fmin 0, fmax sr/2, slaney norm), written
   here in numpy so that the workload does not need librosa (tests compare against librosa);
5. log(x + 1e-20);
6. frame splicing 3: frame t becomes [x_t, x_{t+1}, x_{t+2}] (zeros past the end), then every
   3rd frame is kept (stacking AND subsampling: 10 ms -> 30 ms per frame, 80 -> 240 features);
7. per-feature normalization over the valid frames, seq_len = ceil(ceil(samples / hop) / 3),
   with the unbiased std (torch's default) + 1e-5. (The reference adds 1e-5 inside its per-row
   loop, so row i of a batch of B gets (B - i) * 1e-5; its QSL featurizes one sample at a time,
   B = 1, which is what this module does.)

Everything here is host-side numpy on one utterance: the features are computed in the input
pipeline, as the reference's QSL does before LoadGen starts.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

LOG_ZERO_GUARD = 1e-20  # features.py: torch.log(x + 1e-20)
NORM_CONSTANT = 1e-5  # features.py: x_std += constant
PREEMPHASIS = 0.97  # features.py: FilterbankFeatures(preemph=0.97)


@dataclasses.dataclass(frozen=True)
class FeatureConfig:
    """The `[input_eval]` keys of rnnt.toml that shape the features (defaults: the reference)."""

    sample_rate: int = 16000
    window_size: float = 0.02
    window_stride: float = 0.01
    n_fft: int = 512
    features: int = 80
    frame_splicing: int = 3
    dither: float = 0.00001

    @property
    def win_length(self) -> int:
        """Samples per window: int(sample_rate * window_size) (features.py)."""
        return int(self.sample_rate * self.window_size)

    @property
    def hop_length(self) -> int:
        """Samples per hop: int(sample_rate * window_stride) (features.py)."""
        return int(self.sample_rate * self.window_stride)

    @property
    def out_features(self) -> int:
        """Features per model frame: features * frame_splicing (model_separable_rnnt.py)."""
        return self.features * self.frame_splicing


def hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    """Slaney's mel scale (librosa.hz_to_mel, htk=False): linear below 1 kHz, log above."""
    hz = np.asarray(hz, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = hz / f_sp
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, math.log(6.4) / 27.0
    log_part = min_log_mel + np.log(np.maximum(hz, min_log_hz) / min_log_hz) / logstep
    return np.where(hz >= min_log_hz, log_part, mels)


def mel_to_hz(mels: np.ndarray) -> np.ndarray:
    """The inverse of `hz_to_mel`."""
    mels = np.asarray(mels, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, math.log(6.4) / 27.0
    log_part = min_log_hz * np.exp(logstep * (mels - min_log_mel))
    return np.where(mels >= min_log_mel, log_part, f_sp * mels)


def mel_filterbank(sample_rate: int, n_fft: int, n_mels: int) -> np.ndarray:
    """[n_mels, 1 + n_fft // 2] triangular Slaney-normalized filters, as
    librosa.filters.mel(sr=sample_rate, n_fft=n_fft, n_mels=n_mels, fmin=0, fmax=sr / 2)."""
    fft_freqs = np.linspace(0.0, sample_rate / 2.0, 1 + n_fft // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2.0), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
    return (weights * enorm[:, None]).astype(np.float32)


def hann_window(length: int) -> np.ndarray:
    """torch.hann_window(length, periodic=False): the symmetric Hann window."""
    if length == 1:
        return np.ones(1)
    n = np.arange(length)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * n / (length - 1))


def power_spectrum(audio: np.ndarray, cfg: FeatureConfig) -> np.ndarray:
    """[frames, 1 + n_fft // 2] |STFT|^2 of the pre-emphasized audio, frames = 1 + len // hop
    (torch.stft, center=True, reflect padding)."""
    x = np.asarray(audio, dtype=np.float64)
    x = np.concatenate([x[:1], x[1:] - PREEMPHASIS * x[:-1]])
    pad = cfg.n_fft // 2
    x = np.pad(x, (pad, pad), mode="reflect")
    window = np.zeros(cfg.n_fft)
    left = (cfg.n_fft - cfg.win_length) // 2
    window[left:left + cfg.win_length] = hann_window(cfg.win_length)
    frames = 1 + (len(x) - cfg.n_fft) // cfg.hop_length
    index = np.arange(cfg.n_fft)[None, :] + cfg.hop_length * np.arange(frames)[:, None]
    spectrum = np.fft.rfft(x[index] * window[None, :], n=cfg.n_fft, axis=-1)
    return spectrum.real ** 2 + spectrum.imag ** 2


def log_mel(audio: np.ndarray, cfg: FeatureConfig) -> np.ndarray:
    """[frames, features] log mel energies (steps 1-5 of the module docstring)."""
    power = power_spectrum(audio, cfg)
    if cfg.dither > 0:
        power = power + cfg.dither ** 2
    mel = power @ mel_filterbank(cfg.sample_rate, cfg.n_fft, cfg.features).T.astype(np.float64)
    return np.log(mel + LOG_ZERO_GUARD)


def seq_len(num_samples: int, cfg: FeatureConfig) -> int:
    """Valid model frames of an utterance: `FilterbankFeatures.get_seq_len`."""
    frames = (num_samples + cfg.hop_length - 1) // cfg.hop_length
    return (frames + cfg.frame_splicing - 1) // cfg.frame_splicing


def splice_frames(x: np.ndarray, splicing: int) -> np.ndarray:
    """[frames, F] -> [ceil(frames / splicing), F * splicing]: frame t concatenated with the
    next `splicing - 1` frames (zeros past the end), every `splicing`-th frame kept."""
    seq = [x]
    for n in range(1, splicing):
        shifted = np.zeros_like(x)
        shifted[:-n] = x[n:]
        seq.append(shifted)
    return np.concatenate(seq, axis=1)[::splicing]


def normalize_per_feature(x: np.ndarray, length: int) -> np.ndarray:
    """(x - mean) / (std + 1e-5) per feature over the first `length` frames (unbiased std)."""
    valid = x[:length]
    mean = valid.mean(axis=0)
    std = valid.std(axis=0, ddof=1) if length > 1 else np.zeros_like(mean)
    return (x - mean) / (std + NORM_CONSTANT)


def features(audio: np.ndarray, cfg: FeatureConfig) -> np.ndarray:
    """[seq_len, features * frame_splicing] float32 model inputs of one utterance (the
    reference's output cut to its seq_len, `x[:, :, :seq_len.max()]` for a batch of one)."""
    x = log_mel(audio, cfg)
    if cfg.frame_splicing > 1:
        x = splice_frames(x, cfg.frame_splicing)
    length = seq_len(len(audio), cfg)
    return normalize_per_feature(x, length)[:length].astype(np.float32)
