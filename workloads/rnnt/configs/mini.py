"""The same RNN-T code, small (encoder 1 + 1 LSTM of 128 around the 2x stack, prediction 1 LSTM
of 64, joint 128), on multi-digit utterances of the Free Spoken Digit Dataset: 2-4 random digit
recordings concatenated ("four two seven"), 8 kHz, the reference's feature pipeline with 40 mel
bins; trained on 5 speakers, evaluated on 200 fixed utterances of the held-out speaker "theo".
NOT an MLPerf result.

    tpubench run rnnt --config=mini --config.data.dir=DIR --workdir=RUN   # DIR/fsdd/recordings
    tpubench infer rnnt --config=mini --config.data.dir=DIR --params=RUN --scenario=Offline \\
        --mode=accuracy --batch-sizes=50 --workdir=OUT

Served in frame buckets (`data.frame_buckets`, docs/inference.md "RNN-T"): the 200 eval
utterances (16-74 frames) are padded to 9,100 frames in all instead of 20,000 in one bucket of
100 (with --batch-sizes=50, the batches run cover 17,000 row-frames instead of 20,000), with the
same 200 responses (measured on a 300-step checkpoint, `tpubench infer` Offline accuracy).

Baselines on the same eval set (baselines/rnnt.py): empty output WER 1.0000, the
most frequent training transcript ("three five") 0.8889, the best constant guess ("two two")
0.8819.

Target: WER <= 0.20, far below those baselines (0.88) and above where the model goes on to
(0.1823 at step 525 and 0.1667 at step 600 on seed 0, still falling). Measured (JAX 0.10.2 CPU,
`tpubench run`, evals every 75 steps of 32), WER at steps 75, 150, ...:
    seed 0: 1.0000 0.8906 0.8594 0.5330 0.2622 0.2118 0.1823 -> target at step 525
    seed 1: 1.0000 0.9705 0.7465 0.3299 0.2031 0.1997 -> target at step 450
The margin at the crossing is thin on seed 1 (0.2031 at 375, 0.1997 at 450): a CPU that rounds
differently may cross one eval later, which tests/test_rnnt_mini.py allows (one eval of slack,
step budget only). Chosen over 0.15 because the model was not measured to get there within a
few minutes of CPU.
Wall time was not measured on a quiet machine (2 cores shared by many jobs): none is quoted.
"""

import ml_collections

from workloads.rnnt.configs import full


def get_config() -> ml_collections.ConfigDict:
    c = full.get_config()
    c.data.update({
        "dataset": "fsdd", "source": "fsdd", "eval_speakers": ("theo",),
        "digits_min": 2, "digits_max": 4, "max_clip_samples": 6000,
        # FSDD is 8 kHz: the reference's 20 ms / 10 ms windows are 160 / 80 samples; n_fft 256
        # (features.py: 2 ** ceil(log2(win_length))); 40 mel bins fit 129 FFT bins
        "sample_rate": 8000, "n_fft": 256, "features": 40,
        # 4 clips of <= 6,000 samples: <= 300 frames of 10 ms -> 100 spliced frames
        "max_frames": 100, "max_label_len": 24,  # "three seven seven seven": 23 characters
        # inference length buckets: max_frames / 5 steps, as full.py (eval lengths: 16-74)
        "frame_buckets": (20, 40, 60, 80, 100),
    })
    c.model.update({"encoder_hidden": 128, "encoder_pre_layers": 1, "encoder_post_layers": 1,
                    "pred_hidden": 64, "pred_layers": 1, "joint_hidden": 128, "dropout": 0.1,
                    "max_output_len": 48})
    c.data.global_batch_size = 32
    c.data.train_samples = 2400  # one "epoch" = 75 steps (utterances are drawn afresh)
    c.eval.samples = 200
    c.eval.batch_size = 50
    c.eval.target_value = 0.20
    c.eval.every_samples = 2400
    c.optimizer.learning_rate = 2e-3
    c.schedule.update({"warmup_steps": 50, "train_steps": 1500, "end_learning_rate": 1e-4})
    c.run.max_train_samples = 1500 * 32
    c.run.steps_per_dispatch = 5
    return c
