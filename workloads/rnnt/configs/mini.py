"""PLACEHOLDER"""

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
    })
    c.model.update({"encoder_hidden": 128, "encoder_pre_layers": 1, "encoder_post_layers": 1,
                    "pred_hidden": 64, "pred_layers": 1, "joint_hidden": 128, "dropout": 0.1,
                    "max_output_len": 48})
    c.data.global_batch_size = 32
    c.data.train_samples = 2400  # one "epoch" = 75 steps (utterances are drawn afresh)
    c.eval.samples = 200
    c.eval.batch_size = 50
    c.eval.target_value = 0.10
    c.eval.every_samples = 2400
    c.optimizer.learning_rate = 2e-3
    c.schedule.update({"warmup_steps": 50, "train_steps": 1500, "end_learning_rate": 1e-4})
    c.run.max_train_samples = 1500 * 32
    c.run.steps_per_dispatch = 5
    return c
