"""The v0.7 inference rules that the r0.7 submission checker holds, against the checker itself
(mlcommons/inference branch r0.7, tools/submission/submission-checker.py, in ../shared: its
MODEL_CONFIG["v0.7"]): the scenarios each benchmark may run and RNN-T's accuracy target
(issue 35, items 2 and 3)."""

from __future__ import annotations

import importlib.util
import os
import pathlib

import pytest
from conftest import REPO, missing

from tpubench import config as config_lib
from tpubench import registry
from tpubench.infer.spec import inference_spec


@pytest.fixture(scope="module")
def checker_v07() -> dict:
    shared = pathlib.Path(os.environ.get("TPUBENCH_SHARED_DIR", REPO.parent / "shared"))
    path = shared / "mlperf_inference_v07" / "tools" / "submission" / "submission-checker.py"
    if not path.is_file():
        missing(f"{path} is missing (the r0.7 submission checker; set TPUBENCH_SHARED_DIR)")
    spec = importlib.util.spec_from_file_location("r07_submission_checker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MODEL_CONFIG["v0.7"]


def _allowed(checker: dict, model: str) -> set[str]:
    """Every scenario the checker lists for `model`, required or optional, datacenter or edge."""
    return {s for table in ("required-scenarios-datacenter", "optional-scenarios-datacenter",
                            "required-scenarios-edge", "optional-scenarios-edge")
            for s in checker[table].get(model, [])}


@pytest.mark.parametrize(("workload", "config", "model"), [
    ("dlrm", "mini", "dlrm-99"), ("rnnt", "mini", "rnnt"), ("unet3d", "mini", "3d-unet-99")])
def test_each_benchmark_serves_exactly_the_scenarios_v07_allows_it(checker_v07, workload,
                                                                   config, model):
    """DLRM: Offline, Server (datacenter only); RNN-T: Offline, Server, SingleStream (no
    MultiStream); 3D U-Net: Offline and the edge suite's SingleStream. Bites: DLRM accepting
    SingleStream and MultiStream, RNN-T MultiStream, 3D U-Net without SingleStream (each the old
    code)."""
    spec = inference_spec(registry.create(config_lib.load(workload, config)))
    assert set(spec.scenarios) == _allowed(checker_v07, model)


def test_rnnt_target_is_the_checkers(checker_v07):
    """submission-checker.py: "rnnt": ("WER", (100 - 7.452) * 0.99) (word accuracy, %). Bites:
    the reference run's 7.452253714852645, which asks 91.622269% instead of 91.62252%."""
    metric, target = checker_v07["accuracy-target"]["rnnt"]
    spec = inference_spec(registry.create(config_lib.load("rnnt", "mini")))
    assert metric == "WER"
    assert spec.reference_quality * spec.quality_fraction * 100 == pytest.approx(target,
                                                                                 rel=1e-12)
