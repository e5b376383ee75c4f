"""RNN-T: the reference's features (against librosa), model size, the transducer loss (against a
brute-force sum over alignments), greedy decoding (a hand-built joint and the reference's
per-utterance loop), the smoke run and bad input."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.loops import steps
from tpubench.loops import supervised as train
from workloads.rnnt import decode, features, text
from workloads.rnnt.loss import rnnt_loss
from workloads.rnnt.model import RNNT, SOS


def _workload(name: str, **overrides):
    return registry.create(config_lib.load("rnnt", name, overrides))


def _audio(seconds: float, rate: int, seed: int = 0) -> np.ndarray:
    """A chirp plus noise: energy in every mel band."""
    t = np.arange(int(seconds * rate)) / rate
    rng = np.random.default_rng(seed)
    chirp = 0.3 * np.sin(2 * np.pi * (100 + 1500 * t) * t)
    return (chirp + 0.05 * rng.normal(size=t.shape)).astype(np.float32)


# ---- features --------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg", [features.FeatureConfig(),
                                 features.FeatureConfig(sample_rate=8000, n_fft=256,
                                                        features=40)],
                         ids=["reference-16k", "mini-8k"])
def test_log_mel_equals_librosa_on_the_same_audio(cfg):
    """Pre-emphasis 0.97, centered reflect-padded STFT with a symmetric Hann window of 20 ms
    zero-padded to n_fft, + dither^2, librosa's Slaney filterbank, log(x + 1e-20).

    Bites: a periodic Hann window (np.hanning(win + 1)[:-1]) moved the log-mels by 0.05; no
    pre-emphasis by 1.4."""
    librosa = pytest.importorskip("librosa")
    import scipy.signal

    audio = _audio(1.3, cfg.sample_rate)
    fb = librosa.filters.mel(sr=cfg.sample_rate, n_fft=cfg.n_fft, n_mels=cfg.features, fmin=0,
                             fmax=cfg.sample_rate / 2)
    np.testing.assert_allclose(features.mel_filterbank(cfg.sample_rate, cfg.n_fft, cfg.features),
                               fb, atol=1e-7)
    x = np.concatenate([audio[:1], audio[1:] - 0.97 * audio[:-1]])
    window = scipy.signal.get_window("hann", cfg.win_length, fftbins=False)
    spec = np.abs(librosa.stft(x, n_fft=cfg.n_fft, hop_length=cfg.hop_length,
                               win_length=cfg.win_length, window=window, center=True,
                               pad_mode="reflect")) ** 2
    want = np.log(fb @ (spec + cfg.dither ** 2) + 1e-20).T
    got = features.log_mel(audio, cfg)
    assert got.shape == want.shape == (1 + len(audio) // cfg.hop_length, cfg.features)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)  # librosa computes in float32


def test_splicing_subsampling_and_normalization_follow_the_reference():
    """Frame t of the output is [x_3t, x_3t+1, x_3t+2] (zeros past the end), normalized per
    feature over the first ceil(ceil(n / hop) / 3) frames with the unbiased std + 1e-5.

    Bites: the biased std (ddof=0) changed the features by 0.1%; seq_len from the STFT frame
    count (1 + n // hop) instead of ceil(n / hop) kept one frame more."""
    cfg = features.FeatureConfig(sample_rate=8000, n_fft=256, features=40)
    audio = _audio(1.0, 8000)[:7920]  # ceil(7920 / 80) = 99 frames; the STFT has 1 + 99 = 100
    mel = features.log_mel(audio, cfg)
    assert mel.shape[0] == 100
    length = features.seq_len(len(audio), cfg)
    assert length == 33  # ceil(99 / 3); the spliced STFT has ceil(100 / 3) = 34 rows
    spliced = np.zeros((34, 120))
    for t in range(34):
        for n in range(3):
            if 3 * t + n < 100:
                spliced[t, 40 * n:40 * (n + 1)] = mel[3 * t + n]
    valid = spliced[:33]
    mean = valid.mean(0)
    std = np.sqrt(((valid - mean) ** 2).sum(0) / 32)
    want = (valid - mean) / (std + 1e-5)
    got = features.features(audio, cfg)
    assert got.shape == (33, 120) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_features_of_a_real_fsdd_recording_equal_librosa(shared_data_dir):
    """The mini's own pipeline on a real 8 kHz recording (3_theo_7.wav).

    Bites: reading the wav as unsigned bytes instead of int16 (values off by orders)."""
    librosa = pytest.importorskip("librosa")
    from workloads.rnnt import input_pipeline

    audio = input_pipeline.read_wav(shared_data_dir / "fsdd" / "recordings" / "3_theo_7.wav")
    want, _ = librosa.load(shared_data_dir / "fsdd" / "recordings" / "3_theo_7.wav", sr=None)
    np.testing.assert_allclose(audio, want, atol=1e-6)


# ---- the model ---------------------------------------------------------------------------------
def test_full_rnnt_has_the_reference_parameter_count():
    """45,323,037 = encoder 42,967,040 (LSTM 240->1024, 1024->1024, then 2048->1024 after the
    2x stack, 1024->1024 x 2; torch's two bias vectors per layer) + prediction 1,652,480
    (embedding 28 x 320, 2 LSTM 320) + joint 703,517 (1344 -> 512 -> 29).

    Bites: one bias per LSTM layer (flax's default cell) gave 45,282,077."""
    w = _workload("full")
    assert w.in_features == 240
    assert steps.param_count(w) == 45_323_037
    params = jax.eval_shape(lambda: w.init(jax.random.PRNGKey(0))[0])
    from flax import linen as nn
    shapes = jax.tree_util.tree_map(lambda x: x.shape, nn.meta.unbox(params))
    assert shapes["encoder"]["post_rnn"]["layer_0"]["weight_ih"] == (4096, 2048)
    assert shapes["prediction"]["embed"] == (28, 320)
    assert shapes["joint_net"]["fc1"]["weight"] == (512, 1344)
    assert shapes["joint_net"]["fc2"]["weight"] == (29, 512)


def test_stack_time_halves_frames_and_lengths_as_the_reference():
    """StackTime(2): [x0 x1], [x2 x3], [x4 0]; lengths (n + 3) // 2 - 1 = ceil(n / 2).

    Bites: floor(n / 2) lost the last odd frame (5 -> 2)."""
    from workloads.rnnt.model import stack_time

    x = jnp.arange(10.0).reshape(1, 5, 2)
    y, lens = stack_time(x, jnp.array([5, 4, 1]), 2)
    assert y.shape == (1, 3, 4)
    np.testing.assert_array_equal(y[0], [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 0]])
    np.testing.assert_array_equal(lens, [3, 2, 1])


def test_forget_gate_bias_is_one_in_bias_ih_and_zero_in_bias_hh():
    """rnn.py LstmDrop: bias_ih[H:2H] = 1.0, bias_hh[H:2H] = 0.

    Bites: setting the chunk [0:H] (the input gate)."""
    w = _workload("smoke")
    from flax import linen as nn
    params = nn.meta.unbox(w.init(jax.random.PRNGKey(0))[0])
    layer = params["encoder"]["pre_rnn"]["layer_0"]
    h = w.config.model.encoder_hidden
    np.testing.assert_array_equal(layer["bias_ih"][h:2 * h], 1.0)
    np.testing.assert_array_equal(layer["bias_hh"][h:2 * h], 0.0)
    assert not np.all(layer["bias_ih"][:h] == 1.0)


# ---- the loss ----------------------------------------------------------------------------------
def _brute_force_nll(logits: np.ndarray, labels: list[int], blank: int) -> float:
    """-log of the sum over every alignment (T blanks and U labels, the last a blank)."""
    x = np.asarray(logits, np.float64)
    lp = x - np.logaddexp.reduce(x, axis=-1, keepdims=True)
    frames, u_count = lp.shape[0], len(labels)
    total = []
    for emits in itertools.combinations(range(frames + u_count - 1), u_count):
        t = u = 0
        s = 0.0
        for k in range(frames + u_count):
            if k in emits:
                s += lp[t, u, labels[u]]
                u += 1
            else:
                s += lp[t, u, blank]
                t += 1
        total.append(s)
    return -float(np.logaddexp.reduce(total))


def test_rnnt_loss_equals_a_brute_force_sum_over_all_alignments():
    """Padded batch, varying T_b and U_b (including U_b = 0): each row equals the brute force
    on its unpadded lattice; the gradient is finite.

    Bites: the final term without blank[T-1, U] (off by ~1.6); ignoring label_lens (row 2)."""
    rng = np.random.default_rng(0)
    b, t, u, v = 4, 5, 3, 6
    logits = (2 * rng.normal(size=(b, t, u + 1, v))).astype(np.float32)
    labels = rng.integers(0, v - 1, size=(b, u))
    t_lens, u_lens = np.array([5, 2, 4, 1]), np.array([3, 1, 0, 2])
    got = np.asarray(rnnt_loss(jnp.asarray(logits), jnp.asarray(labels), jnp.asarray(t_lens),
                               jnp.asarray(u_lens), v - 1))
    want = [_brute_force_nll(logits[i, :t_lens[i], :u_lens[i] + 1], labels[i, :u_lens[i]].tolist(),
                             v - 1) for i in range(b)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    grad = jax.grad(lambda x: rnnt_loss(x, jnp.asarray(labels), jnp.asarray(t_lens),
                                        jnp.asarray(u_lens), v - 1).sum())(jnp.asarray(logits))
    assert np.all(np.isfinite(grad))
    # d loss / d logits of a row sums to 0 over the classes at every lattice point (softmax)
    np.testing.assert_allclose(np.asarray(grad).sum(-1), 0.0, atol=1e-5)


# ---- greedy decoding ---------------------------------------------------------------------------
def _identity_joint_params(model: RNNT) -> dict:
    """Joint logits = relu(f[:29]): fc1 = [I | 0], fc2 = I, no bias; the prediction network is
    then irrelevant to the argmax."""
    params = jax.tree_util.tree_map(jnp.zeros_like, _init(model, enc_in=29))
    eye = jnp.eye(29)
    params["joint_net"]["fc1"]["weight"] = jnp.concatenate(
        [eye, jnp.zeros((29, model.pred_hidden))], axis=1)
    params["joint_net"]["fc2"]["weight"] = eye
    return params


def _init(model: RNNT, enc_in: int) -> dict:
    from flax import linen as nn
    variables = model.init(jax.random.PRNGKey(1), jnp.zeros((1, 4, enc_in)),
                           jnp.array([4]), jnp.zeros((1, 2), jnp.int32))
    return nn.meta.unbox(variables["params"])


def test_greedy_decoding_on_a_hand_built_joint():
    """Frame symbols (a, blank, b, c) with 3 valid frames and 2 symbols per step at most:
    a non-blank argmax repeats until the per-step limit, blank moves on, frames past the
    length are skipped: "aabb". A second row of length 0 decodes to nothing.

    Bites: no per-step limit (the loop ran to 30 per frame); decoding frames past the length
    ("aabbcc")."""
    model = RNNT(encoder_hidden=29, pred_hidden=4, pred_layers=1, joint_hidden=29,
                 dropout=0.0)
    params = _identity_joint_params(model)
    symbols = [text.LABELS.index("a"), text.BLANK, text.LABELS.index("b"),
               text.LABELS.index("c")]
    enc = 5.0 * jax.nn.one_hot(jnp.array([symbols, symbols]), 29)
    ids, counts = jax.jit(decode.greedy_decode_encoded, static_argnums=(0, 4, 5))(
        model, params, enc, jnp.array([3, 0]), 2, 8)
    assert text.decode_rows(np.asarray(ids), np.asarray(counts)) == ["aabb", ""]
    assert np.asarray(ids)[0, 4:].tolist() == [-1] * 4


def _reference_greedy(model: RNNT, params, enc: np.ndarray, length: int, max_symbols: int
                      ) -> list[int]:
    """decoders.py `_greedy_decode`, one utterance, in Python (the loop the reference runs)."""
    variables = {"params": params}
    hidden = None
    label: list[int] = []
    for t in range(length):
        f = jnp.asarray(enc[None, t])
        not_blank, added = True, 0
        while not_blank and added < max_symbols:
            last = SOS if not label else label[-1]
            g, hidden_prime = model.apply(variables, jnp.array([last]), hidden,
                                          method=RNNT.predict)
            k = int(jnp.argmax(model.apply(variables, f, g, method=RNNT.joint)[0]))
            if k == model.num_classes - 1:
                not_blank = False
            else:
                label.append(k)
                hidden = hidden_prime
            added += 1
    return label


def test_batched_jitted_greedy_decoding_equals_the_reference_loop_per_utterance():
    """A random small RNN-T on a batch of 3 of different lengths: each row equals the
    reference's per-utterance Python loop. The prediction network's half of the joint is
    weighted up (x20, encoder outputs x0.3) so that the emitted history decides the argmax,
    and the blank logit gets +2.

    Bites: predicting the next g from symbol 0 instead of the emitted symbol (19 of 21 ids
    differ)."""
    model = RNNT(encoder_hidden=16, pred_hidden=8, pred_layers=2, joint_hidden=16, dropout=0.0,
                 encoder_pre_layers=1, encoder_post_layers=1)
    params = _init(model, enc_in=16)
    fc1 = params["joint_net"]["fc1"]["weight"]
    params["joint_net"]["fc1"]["weight"] = fc1.at[:, 16:].multiply(20.0)
    params["joint_net"]["fc2"]["weight"] = params["joint_net"]["fc2"]["weight"] * 6
    params["joint_net"]["fc2"]["bias"] = params["joint_net"]["fc2"]["bias"].at[28].add(2.0)
    rng = np.random.default_rng(3)
    enc = (0.3 * rng.normal(size=(3, 7, 16))).astype(np.float32)
    lens = np.array([7, 4, 1])
    ids, counts = jax.jit(decode.greedy_decode_encoded, static_argnums=(0, 4, 5))(
        model, params, jnp.asarray(enc), jnp.asarray(lens), 3, 21)
    ids, counts = np.asarray(ids), np.asarray(counts)
    want = [_reference_greedy(model, params, enc[i], lens[i], 3) for i in range(3)]
    assert sum(len(w) for w in want) >= 4  # the test exercises emissions, not only blanks
    for i in range(3):
        assert ids[i, :counts[i]].tolist() == want[i]


# ---- runs and bad input ------------------------------------------------------------------------
def test_smoke_one_train_step_and_one_eval_on_synthetic_data(tmp_path):
    """One dispatch and one eval; an untrained model's WER is at least 0.9.

    Bites: eval_finalize returning 1 - WER (word accuracy) instead of the WER."""
    cfg = config_lib.load("rnnt", "smoke")
    s = train.train_and_evaluate(cfg, tmp_path / "run")
    assert s["status"] == "aborted" and s["steps"] == 1
    assert len(s["quality_history"]) == 1
    # an untrained model emits (almost) nothing or garbage: every reference word is an error
    assert s["final_quality"] >= 0.9


def test_missing_fsdd_is_a_usage_error_naming_the_download(tmp_path):
    """Bites: check_fsdd looking only for the folder (an empty folder passed)."""
    (tmp_path / "fsdd" / "recordings").mkdir(parents=True)
    w = _workload("mini", **{"data.dir": str(tmp_path)})
    with pytest.raises(UsageError, match="download_fsdd"):
        w.check_data()


def test_uniform_joint_loss_counts_the_alignments():
    """With all-equal logits every alignment has probability V^-(T+U), so the loss is
    (T + U) log V - log C(T + U - 1, U).

    Bites: a lattice recurrence that drops the emit path (loss = T log V)."""
    t, u, v = 6, 3, 29
    logits = jnp.zeros((1, t, u + 1, v))
    loss = float(rnnt_loss(logits, jnp.array([[1, 2, 3]]), jnp.array([t]), jnp.array([u]), 28)[0])
    assert loss == pytest.approx((t + u) * math.log(v) - math.log(math.comb(t + u - 1, u)),
                                 rel=1e-6)


# ---- the converter -----------------------------------------------------------------------------
def _as_reference_state_dict(params) -> dict[str, np.ndarray]:
    """The smoke params under the reference checkpoint's tensor names (written out by hand from
    model_separable_rnnt.py / torch.nn.LSTM), plus the featurizer buffers the converter drops."""
    out = {"audio_preprocessor.featurizer.fb": np.zeros((1, 40, 129)),
           "audio_preprocessor.featurizer.window": np.zeros(160)}
    for group, torch_name in (("pre_rnn", "encoder.pre_rnn.lstm"),
                              ("post_rnn", "encoder.post_rnn.lstm")):
        for layer, tensors in params["encoder"][group].items():
            for name, value in tensors.items():
                out[f"{torch_name}.{name}_l{layer.split('_')[1]}"] = np.asarray(value)
    for layer, tensors in params["prediction"]["dec_rnn"].items():
        for name, value in tensors.items():
            out[f"prediction.dec_rnn.lstm.{name}_l{layer.split('_')[1]}"] = np.asarray(value)
    out["prediction.embed.weight"] = np.asarray(params["prediction"]["embed"])
    for index, fc in (("0", "fc1"), ("3", "fc2")):
        for name in ("weight", "bias"):
            out[f"joint_net.{index}.{name}"] = np.asarray(params["joint_net"][fc][name])
    return out


def test_converter_maps_every_reference_tensor_and_the_checkpoint_restores(tmp_path):
    """A made .npz with the reference's names converts to exactly the model's params, and the
    workdir it writes restores them through the harness (`restore_variables`).

    Bites: mapping joint_net.3 to fc1 (two tensors map to one leaf: KeyError)."""
    from flax import linen as nn

    from tpubench.loops import checkpoint
    from workloads.rnnt import convert

    w = _workload("smoke")
    params = jax.device_get(nn.meta.unbox(jax.jit(w.init)(jax.random.PRNGKey(7))[0]))
    np.savez(tmp_path / "ref.npz", **_as_reference_state_dict(params))
    converted = convert.convert(convert.load_state_dict(str(tmp_path / "ref.npz")))
    jax.tree_util.tree_map(np.testing.assert_array_equal, converted, params)
    convert.write_workdir(converted, w, str(tmp_path / "ckpt"))
    restored, _ = checkpoint.restore_variables(tmp_path / "ckpt", w)
    jax.tree_util.tree_map(np.testing.assert_array_equal, nn.meta.unbox(restored), params)
    with pytest.raises(KeyError, match="unknown tensor"):
        convert.convert({"encoder.extra.weight": np.zeros(1)})


# ---- the full config: LibriSpeech through tfds, the v0.7 target ----------------------------------
def test_librispeech_eval_pipeline_on_tfds_mock_data_and_the_15_second_filter():
    """dev-clean through the real tfds code path (mock examples): padded features of 240 per
    frame, transcripts as label ids; the filter keeps 15.000 s and drops one sample more.

    Bites: `<` instead of `<=` in keep_for_eval."""
    from unittest import mock

    import tensorflow_datasets as tfds

    from workloads.rnnt import librispeech

    assert librispeech.keep_for_eval(15 * 16000) and not librispeech.keep_for_eval(15 * 16000 + 1)
    cfg = config_lib.load("rnnt", "full", {})
    with tfds.testing.mock_data(num_examples=5), mock.patch.object(
            tfds.core.DatasetBuilder, "is_prepared", return_value=True):
        arrays = librispeech.eval_arrays(cfg)
    assert arrays["features"].shape == (5, 500, 240)
    assert arrays["labels"].shape == (5, 384)
    assert np.all(arrays["feature_lens"] >= 1) and np.all(arrays["label_lens"] >= 1)
    assert np.all((arrays["labels"] >= 0) & (arrays["labels"] < text.BLANK))


def test_full_inference_target_is_wer_8_37748_percent():
    """v0.7: 99% of the FP32 reference's word accuracy, the r0.7 submission checker's
    (100 - 7.452) x 0.99 (tests/test_infer_v07_rules.py reads the checker).

    Bites: 0.99 x the reference WER (a WER target of 7.378%)."""
    from tpubench.infer.spec import inference_spec
    from workloads.rnnt.configs import full

    spec = inference_spec(_workload("full"))
    assert spec.mlperf_name == "rnnt" and spec.benchmark_model_and_data is True
    assert spec.server_latency_bound_ms == 1000.0
    assert 1.0 - spec.quality_target == pytest.approx(0.0837748, abs=5e-8)
    assert full.WER_TARGET == pytest.approx(1.0 - spec.quality_target, abs=1e-12)
    assert _workload("full").target.higher_is_better is False
