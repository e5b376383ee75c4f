"""Spec of `tpubench report` on Google's real MLPerf Training v0.7 submission tree.

Every score is compared with what `mlperf_logging`'s own result summarizer computes for the same
folder (its `_compute_strong_score_standalone`, the function `summarize_results` calls per
benchmark folder); no official number is copied into this file.
"""

import contextlib
import io
import json
import pathlib
import re
import shutil

import numpy as np
import pytest
from conftest import missing
from mlperf_logging.result_summarizer import result_summarizer as official

from tpubench.errors import UsageError
from tpubench.mlperf.mllog import check_compliance
from tpubench.report import cli
from tpubench.report.compliance import ComplianceCache, check_in_process, check_runs
from tpubench.report.tree import load_tree, rescore

# The 35 system/benchmark folders of Google's v0.7 submission (results/<system>/<benchmark>).
GOOGLE_FOLDERS = {
    ("gpu-v100-8-TF2.0", "bert"), ("gpu-v100-8-TF2.0", "resnet"),
    ("tpu-v3-1024-TF", "gnmt"), ("tpu-v3-1024-TF", "maskrcnn"),
    ("tpu-v3-32-TF2.0", "bert"), ("tpu-v3-32-TF2.0", "resnet"),
    ("tpu-v3-4096-JAX", "ssd"),
    *(("tpu-v3-8192-JAX", b) for b in ("bert", "resnet", "transformer")),
    *(("tpu-v3-8192-TF", b) for b in ("bert", "resnet", "ssd", "transformer")),
    *(("tpu-v4-128-TF", b)
      for b in ("bert", "dlrm", "gnmt", "maskrcnn", "minigo", "resnet", "ssd", "transformer")),
    *(("tpu-v4-16-TF", b)
      for b in ("bert", "dlrm", "gnmt", "maskrcnn", "resnet", "ssd", "transformer")),
    *(("tpu-v4-512-TF", b) for b in ("bert", "gnmt", "maskrcnn", "resnet", "ssd", "transformer")),
}


def official_score(benchmark_folder: pathlib.Path, benchmark: str) -> float | None:
    """The official summarizer's score for one results/<system>/<benchmark> folder."""
    with contextlib.redirect_stdout(io.StringIO()):
        score, _, _ = official._compute_strong_score_standalone(
            benchmark, benchmark_folder.parent.name, False, str(benchmark_folder),
            "training", "0.7.0",
        )
    return score


@pytest.fixture(scope="module")
def google(shared_data_dir) -> pathlib.Path:
    return shared_data_dir / "mlperf_v07_results" / "Google"


@pytest.fixture(scope="module")
def report_out(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("report")


@pytest.fixture(scope="module")
def checked_tree(google, report_out):
    tree = load_tree(google)
    # The cache `tpubench report --out=report_out` reads: the CLI run below checks nothing again.
    check_runs(tree.all_runs(), ComplianceCache(report_out / ".compliance_cache.json"))
    rescore(tree)
    return tree


@pytest.fixture(scope="module")
def cli_run(google, report_out, checked_tree):
    out = report_out
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = cli.main([str(google), f"--out={out}", "--html"])
    return status, stdout.getvalue(), out


def _result(tree, system, benchmark):
    return next(r for r in tree.results if r.system == system and r.benchmark == benchmark)


def test_jax_resnet50_on_4096_tpu_v3_chips_scores_as_the_official_summarizer(
    checked_tree, google
):
    res = _result(checked_tree, "tpu-v3-8192-JAX", "resnet")
    assert res.chips == 4096  # systems/tpu-v3-8192-JAX.json: 512 nodes x 8 chips
    assert res.framework == "JAX"
    assert res.minutes == official_score(google / "results/tpu-v3-8192-JAX/resnet", "resnet")
    assert res.verdict() == "valid"
    assert res.compliance_summary() == "5/5 pass"


def test_every_system_and_benchmark_scores_as_the_official_summarizer(checked_tree, google):
    """All 35 folders, by name: a folder lost on disk or by the loader fails the test.

    Bites: deleting one folder of a copy of the tree, or a loader that skips result_9.txt-style
    names (fewer runs, other scores); and a test that compared with however many it found.
    """
    assert len(GOOGLE_FOLDERS) == 35
    assert {(p.parent.name, p.name) for p in google.glob("results/*/*")} == GOOGLE_FOLDERS
    assert {(r.system, r.benchmark) for r in checked_tree.results} == GOOGLE_FOLDERS
    assert len(checked_tree.results) == 35
    assert not checked_tree.open_results and not checked_tree.not_scored
    for res in checked_tree.results:
        folder = google / "results" / res.system / res.benchmark
        assert res.minutes == pytest.approx(official_score(folder, res.benchmark), rel=1e-12), (
            res.system, res.benchmark)


def test_one_aborted_run_counts_as_the_slowest(checked_tree, google):
    # Google's TPU v3-1024 Mask R-CNN result has one run that aborted (run_stop status abort).
    res = _result(checked_tree, "tpu-v3-1024-TF", "maskrcnn")
    assert [r.status for r in res.runs].count("aborted") == 1
    assert len(res.score.used) == 3  # 4 converged runs, the fastest dropped
    assert res.minutes == official_score(google / "results/tpu-v3-1024-TF/maskrcnn", "maskrcnn")
    assert res.verdict().startswith("1 run not converged (result_0")
    assert res.compliance_summary() == "4/5 pass (fail: result_0)"


def _abort(log: pathlib.Path, target: float) -> None:
    """Rewrite a real log as a run that stopped short of `target` and says so."""
    lines = []
    for line in log.read_text().splitlines():
        if '"key": "eval_accuracy"' in line:
            value = json.loads(line.split(":::MLLOG", 1)[1])["value"]
            if value >= target:
                continue
        lines.append(line.replace('"status": "success"', '"status": "aborted"'))
    log.write_text("\n".join(lines) + "\n")


def test_two_aborted_runs_make_the_result_invalid(google, tmp_path):
    # Google's TPU v4-512 GNMT has one aborted run; abort a second one.
    folder = tmp_path / "Google" / "results" / "tpu-v4-512-TF" / "gnmt"
    shutil.copytree(google / "results/tpu-v4-512-TF/gnmt", folder)
    _abort(folder / "result_1.txt", target=0.24)
    tree = load_tree(tmp_path / "Google")
    check_runs(tree.all_runs())
    rescore(tree)
    res = tree.results[0]
    assert res.minutes is None and not res.valid
    assert res.verdict() == "INVALID: 2 runs did not converge (at most 1 may)"
    assert official_score(folder, "gnmt") is None  # the official tool gives no score either


def test_in_process_compliance_verdicts_match_the_official_checker_cli(google, tmp_path):
    # Copies: the checker CLI writes its own log beside the one it checks.
    ok = shutil.copy(google / "results/tpu-v3-8192-JAX/resnet/result_0.txt", tmp_path / "ok.txt")
    aborted = shutil.copy(google / "results/tpu-v3-1024-TF/maskrcnn/result_0.txt",
                          tmp_path / "aborted.txt")
    for log in (ok, aborted):
        assert check_in_process(log).valid == check_compliance(log).valid
    assert check_in_process(ok).valid
    assert any("eval_accuracy" in line for line in check_in_process(aborted).failed_checks())


def test_report_prints_official_scores_and_writes_tables_and_plots(cli_run, google):
    status, stdout, out = cli_run
    assert status == 0
    expected = official_score(google / "results/tpu-v3-8192-JAX/resnet", "resnet")
    row = next(line for line in stdout.splitlines() if line.startswith("| tpu-v3-8192-JAX | 4096"))
    assert f"| {expected:.3f} |" in row and "5/5 pass" in row
    assert "## maskrcnn" in stdout and "Performance profiles" in stdout
    report = json.loads((out / "report.json").read_text())
    jax_resnet = next(r for r in report["results"]
                      if r["system"] == "tpu-v3-8192-JAX" and r["benchmark"] == "resnet")
    assert jax_resnet["score_minutes"] == expected
    assert (out / "report.md").read_text() in stdout
    for name in ("quality_resnet.png", "quality_maskrcnn.png", "time_to_target.png",
                 "chip_minutes.png", "profiles.png"):
        png = (out / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, name


def test_every_benchmark_gets_a_quality_plot(cli_run, google):
    """Bites: a loader that drops the minigo folder (7 plots instead of 8)."""
    _, _, out = cli_run
    benchmarks = {b for _, b in GOOGLE_FOLDERS}
    assert len(benchmarks) == 8
    assert {p.name for p in out.glob("quality_*.png")} == {f"quality_{b}.png" for b in benchmarks}


def test_missing_or_empty_results_dir_is_a_usage_error_saying_what_to_pass(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        cli.main([str(tmp_path / "nope")])
    with pytest.raises(UsageError, match=re.escape("results/<system>/<benchmark>/")):
        cli.main([str(tmp_path), f"--out={tmp_path / 'out'}"])


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    missing("no headless Chromium (Debian: apt-get install chromium; .ci/run installs it)")


def _screenshot(page: pathlib.Path, shot: pathlib.Path) -> np.ndarray:
    """The top 1280x4000 pixels of `page` as headless Chromium renders it (RGB array)."""
    import subprocess

    from PIL import Image

    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1280,4000", f"--screenshot={shot}", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    return np.asarray(Image.open(shot).convert("RGB")).astype(int)


def test_html_report_is_one_page_whose_tables_and_plots_render_in_a_browser(cli_run, tmp_path):
    """`--html`: report.html holds every Markdown table as an HTML table and every PNG the
    report wrote inlined (decoding to that file's bytes), nothing loaded from elsewhere; headless
    Chromium renders it with the table header colour over a real area and the plots' coloured
    curves, which vanish from a control page whose images are not inlined (the page a report
    linking to its PNGs gives once moved away from them).
    Bites: converting without the `tables` extension (no <table>, no header colour; tried),
    linking the PNGs by file name instead of inlining them (no coloured pixels; tried)."""
    import base64

    _, _, out = cli_run
    page = (out / "report.html").read_text()
    markdown_tables = (out / "report.md").read_text().count("\n| ---")
    assert markdown_tables >= 9 and page.count("<table>") == markdown_tables
    inlined = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    pngs = sorted(out.glob("*.png"))
    assert len(inlined) == len(pngs) == 11
    assert sorted(base64.b64decode(d) for d in inlined) == sorted(p.read_bytes() for p in pngs)
    assert not re.search(r'(src|href)="(?!data:)', page)

    alone = tmp_path / "moved" / "report.html"
    alone.parent.mkdir()
    alone.write_text(page)  # alone in a new folder: it must not need the PNGs beside it
    shot = _screenshot(alone, tmp_path / "page.png")
    header = (np.abs(shot - np.array([0xE8, 0xEE, 0xF7])).sum(axis=-1) == 0).sum()
    assert header > 20_000  # the header rows of the tables, in pixels
    coloured = lambda img: ((img.max(axis=-1) - img.min(axis=-1)) > 80).sum()  # noqa: E731
    linked = tmp_path / "linked" / "report.html"
    linked.parent.mkdir()
    linked.write_text(re.sub(r'src="data:image/png;base64,[^"]+"',
                             lambda m: 'src="quality_resnet.png"', page))
    control = _screenshot(linked, tmp_path / "control.png")
    assert coloured(shot) > 5_000 and coloured(control) < coloured(shot) // 20
