"""One train dispatch and one eval of a tiny RNN-T on synthetic data (tests; any source).

    tpubench run rnnt --config=smoke --workdir=DIR
    ... --config.data.source=fsdd --config.data.dir=DIR   # the FSDD code path

Expected: status "aborted" after 1 step (the budget), in seconds.
"""

import ml_collections

from workloads.rnnt.configs import mini


def get_config() -> ml_collections.ConfigDict:
    c = mini.get_config()
    c.data.dataset = "synthetic"
    c.data.source = "synthetic"
    c.data.global_batch_size = 4
    c.eval.batch_size = 4
    c.data.train_samples = 4
    c.eval.samples = 4
    c.eval.every_samples = 4
    c.model.update({"encoder_hidden": 16, "pred_hidden": 8, "joint_hidden": 16,
                    "max_output_len": 8, "max_symbols_per_step": 2})
    c.run.max_train_samples = 4
    c.run.steps_per_dispatch = 1
    c.schedule.update({"train_steps": 1, "warmup_steps": 0})
    return c
