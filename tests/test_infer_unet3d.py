"""`tpubench infer unet3d` (3d-unet-99 / 3d-unet-99.9) with the real LoadGen: the v0.7
thresholds and sample count, Offline only, a trained smoke model (the mini's code at tiny size)
served in accuracy mode giving exactly its training eval's mean Dice with every response the
direct prediction and nothing compiled during the run, and bad input refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.infer import cli, logs
from tpubench.infer.spec import inference_spec, labelled_eval_samples
from workloads.unet3d import dice
from workloads.unet3d import inference as unet_infer


def _workload(name: str, **overrides):
    return registry.create(config_lib.load("unet3d", name, overrides))


def _made_dirs(tmp_path):
    """A preprocessed dir with its case list and one case's files (check_data reads paths)."""
    import pickle

    pre, labels = tmp_path / "pre", tmp_path / "labelsTr"
    pre.mkdir()
    labels.mkdir()
    with open(pre / "preprocessed_files.pkl", "wb") as f:
        pickle.dump(["BraTS19_x"], f)
    (pre / "BraTS19_x.pkl").write_bytes(b"")
    (labels / "BraTS19_x.nii.gz").write_bytes(b"")
    return {"data.dir": str(pre), "data.label_dir": str(labels)}


def test_full_spec_has_the_v07_thresholds_and_scenarios(tmp_path):
    """The full config, not run: ("DICE", 0.853 * 0.99) and 0.853 * 0.999 as the v0.7
    submission checker computes them, 16 performance samples, judged against the absolute
    target (no measured reference), Offline and the edge suite's SingleStream (the checker's
    table: tests/test_infer_v07_rules.py).
    Bites: 0.999 for 3d-unet-99 -> the 99% target is wrong."""
    dirs = _made_dirs(tmp_path)
    spec = inference_spec(_workload("full", **dirs))
    assert spec.mlperf_name == "3d-unet-99" and spec.benchmark_model_and_data
    assert spec.quality_target == 0.853 * 0.99 == pytest.approx(0.84447, abs=1e-12)
    assert spec.performance_sample_count == 16 and spec.measure_reference is None
    assert spec.scenarios == ("Offline", "SingleStream") and spec.quality_metric == "mean_dice"
    spec999 = inference_spec(_workload("full", **dirs,
                                       **{"eval.inference_variant": "3d-unet-99.9"}))
    assert spec999.mlperf_name == "3d-unet-99.9"
    assert spec999.quality_target == 0.853 * 0.999 == pytest.approx(0.852147, abs=1e-12)
    assert unet_infer.dice.regions_of(_workload("full", **dirs).config) == dice.BRATS_REGIONS


@pytest.mark.parametrize("overrides, match", [
    ({}, "preprocessed_files.pkl"),  # no data dir
    ({"eval.inference_variant": "3d-unet-98"}, "not a v0.7 3D U-Net"),
    ({"data.source": "synthetic"}, "has none"),
])
def test_full_config_without_its_data_is_a_usage_error(overrides, match):
    """Bites: checking the data only when samples load -> no error at spec time."""
    with pytest.raises(UsageError, match=match):
        inference_spec(_workload("full", **overrides))


@pytest.fixture(scope="module")
def trained_smoke(tmp_path_factory):
    """The smoke config trained for its budget (2 steps) with its one eval (8 crops)."""
    from tpubench.loops import supervised as train

    workdir = tmp_path_factory.mktemp("unet3d_train")
    cfg = config_lib.load("unet3d", "smoke", {"run.max_train_samples": 4,
                                              "eval.every_samples": 4})
    return workdir, train.train_and_evaluate(cfg, workdir)


def test_accuracy_mode_is_the_training_eval_exactly_with_nothing_compiled(trained_smoke,
                                                                        tmp_path):
    """Offline accuracy mode on the trained checkpoint, one bucket of the eval batch (8):
    every eval crop once, the mean Dice equal to the training run's eval, bit for bit, every
    logged response the direct prediction of its crop, the Dice recomputed from those equal
    too, and no XLA compile while LoadGen ran.
    Bites: the response cast to uint8 after argmax over the wrong axis -> responses differ;
    the training eval counting the padding crops -> the two Dice differ."""
    import flax.linen as nn
    import jax

    from tpubench.loops.checkpoint import restore_variables

    workdir, trained = trained_smoke
    assert trained["steps"] == 2 and 0.0 < trained["final_quality"] < 1.0
    rc = cli.main(["unet3d", "--config=smoke", "--config.eval.inference_variant=3d-unet-99.9",
                   "--scenario=Offline", "--mode=accuracy", "--batch-sizes=8",
                   f"--params={workdir}", f"--workdir={tmp_path}"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert rc == 0 and summary["accuracy_met"] is True
    assert summary["benchmark"] == "3d-unet-99.9 (NOT AN MLPERF RESULT)"
    assert summary["accuracy"] == trained["final_quality"]  # exactly
    assert summary["accuracy_target"] == pytest.approx(0.999 * trained["final_quality"])
    assert summary["sut"]["compiles_during_test"] == 0
    workload = _workload("smoke")
    samples = labelled_eval_samples(workload)
    assert summary["accuracy_samples"] == samples.count == 8
    rows = logs.read_accuracy_log(tmp_path, np.dtype(np.int8), (16, 16, 16))
    responses = np.stack([rows[i] for i in range(samples.count)])
    params, state = (nn.unbox(v) for v in restore_variables(workdir, workload))
    direct = np.asarray(jax.jit(workload.predict)(params, state, samples.inputs))
    np.testing.assert_array_equal(responses, direct)
    assert dice.mean_dice(dice.counts_np(direct, samples.labels, workload.regions())) == \
        summary["accuracy"]


def test_offline_performance_is_valid_and_server_is_refused(trained_smoke, tmp_path, capsys):
    """Bites: dropping the spec's scenario check -> a Server run of 3d-unet, which v0.7 has
    not."""
    workdir, _ = trained_smoke
    rc = cli.main(["unet3d", "--config=smoke", "--scenario=Offline", "--batch-sizes=8",
                   f"--params={workdir}", f"--workdir={tmp_path / 'perf'}"])
    summary = json.loads((tmp_path / "perf" / "summary.json").read_text())
    assert rc == 0 and summary["validity"] == "VALID"
    assert summary["sut"]["compiles_during_test"] == 0
    capsys.readouterr()
    assert cli.main(["unet3d", "--config=smoke", "--scenario=Server",
                     f"--workdir={tmp_path / 'server'}"]) == 2
    err = capsys.readouterr().err
    assert "no Server scenario" in err and "Traceback" not in err
    assert not (tmp_path / "server" / "summary.json").exists()
