"""Spec of the v0.7 scoring rules and of the AlgoPerf-style profiles, on small hand-made inputs.

The olympic mean is also checked against the official summarizer's own function.
"""

import math

import pytest
from mlperf_logging.result_summarizer import result_summarizer as official

from tpubench.report import profiles
from tpubench.report.scoring import olympic_mean
from tpubench.report.targets import required_runs, target_for


def test_olympic_mean_drops_the_fastest_and_the_slowest_run():
    score = olympic_mean([5.0, 1.0, 3.0, 2.0, 4.0], not_converged=0)
    assert score.used == (2.0, 3.0, 4.0)
    assert score.minutes == pytest.approx(3.0)


def test_one_non_converged_run_counts_as_the_slowest():
    # Four converged runs + one that did not converge: only the fastest converged one is dropped.
    score = olympic_mean([1.0, 2.0, 3.0, 10.0], not_converged=1)
    assert score.used == (2.0, 3.0, 10.0)
    assert score.minutes == pytest.approx(5.0)


def test_two_non_converged_runs_make_the_result_invalid():
    score = olympic_mean([1.0, 2.0, 3.0], not_converged=2)
    assert score.minutes is None
    assert score.reason.startswith("INVALID: 2 runs did not converge")


@pytest.mark.parametrize(
    "times,dropped",
    [([3.0, 1.0, 2.0, 5.0, 4.0], 0), ([3.0, 1.0, 2.0, 7.0], 1),
     ([float(i) for i in range(10, 0, -1)], 0)],
)
def test_olympic_mean_equals_the_official_summarizers(times, dropped):
    expected = official._compute_olympic_average(list(times), dropped, 1)
    assert olympic_mean(times, dropped).minutes == expected


def test_required_runs_follow_the_rules():
    assert {b: required_runs(b) for b in ("resnet", "ssd", "maskrcnn", "dlrm")} == dict.fromkeys(
        ("resnet", "ssd", "maskrcnn", "dlrm"), 5)
    assert {required_runs(b) for b in ("gnmt", "transformer", "bert", "minigo")} == {10}


def test_maskrcnn_target_needs_both_box_and_mask_map():
    target = target_for("maskrcnn")
    assert target.reached({"BBOX": 0.38, "SEGM": 0.34})
    assert not target.reached({"BBOX": 0.38, "SEGM": 0.30})
    assert target.primary_value({"BBOX": 0.38, "SEGM": 0.34}) == 0.38


def test_bert_target_is_0712_at_every_batch_size():
    """The v0.7 rules (tpubench.mlperf.rules): no large-batch relaxation, unlike the 0.7.1 checker.

    Bites: restoring the 0.706 relaxation for batch >= 8192 in tpubench.mlperf.rules.
    """
    target = target_for("bert")
    assert target.primary_threshold == 0.712
    assert not target.reached(0.7119) and target.reached(0.712)


MATRIX = {"A": {"x": 1.0, "y": 2.0}, "B": {"x": 2.0}, "C": {"x": 8.0, "y": 1.0}}


def test_profile_counts_the_fraction_of_benchmarks_within_tau_of_the_best():
    prof = profiles.performance_profiles(MATRIX)
    assert prof.fraction_within("A", 1.0) == 0.5  # best on x only
    assert prof.fraction_within("A", 2.0) == 1.0  # y is 2x the best
    assert prof.fraction_within("B", 100.0) == 0.5  # never ran y: never within tau
    assert prof.rho["A"][0] == 0.5 and prof.rho["A"][-1] == 1.0


def test_algoperf_score_is_the_normalised_area_under_the_profile():
    prof = profiles.performance_profiles(MATRIX)
    # A: x at ratio 1 (full area), y at ratio 2 ((4-2)/(4-1)); averaged over 2 benchmarks.
    assert prof.algoperf_score("A") == pytest.approx((1.0 + 2.0 / 3.0) / 2)
    assert prof.algoperf_score("C") == pytest.approx(0.5)  # x at ratio 8 > tau_max


def test_geomean_speedup_uses_only_benchmarks_both_systems_ran():
    speedup, shared = profiles.geomean_speedup(MATRIX, "A", "C")
    assert shared == 2
    assert speedup == pytest.approx(math.sqrt(8.0 * 0.5))
    assert profiles.geomean_speedup(MATRIX, "A", "B") == (pytest.approx(2.0), 1)
    assert profiles.default_baseline(MATRIX) == "A"
