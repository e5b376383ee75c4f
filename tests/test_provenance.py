"""provenance.json in every workdir, the rerun check, and the end of a run a person reads
(tpubench/loops/provenance.py, tpubench/loops/ending.py; issue 33 items 1 and 3, issue 38
item 3)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import pathlib
import sys

import jax
import pytest
import runs

from tpubench import config as config_lib
from tpubench.errors import UsageError
from tpubench.loops import ending, provenance

TO_TARGET = ("--config=smoke", "--config.eval.target_value=0.0")


def _files(workdir: pathlib.Path) -> dict[str, str]:
    """Every file under `workdir` with the hash of its bytes."""
    return {str(p.relative_to(workdir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(workdir.rglob("*")) if p.is_file()}


def _shown_path(stdout: str, label: str) -> pathlib.Path:
    """The path the end block prints after `label` (one word, e.g. "summary")."""
    line = next(x for x in stdout.splitlines() if x.split(maxsplit=1)[:1] == [label])
    return pathlib.Path(line.split(maxsplit=1)[1].split(";")[0])


def test_a_rerun_with_another_config_is_refused_and_the_same_command_keeps_the_result(tmp_path):
    """A smoke run to its target; its provenance.json holds the resolved config and the versions;
    its end names the quality against the target and paths that exist. The same workdir with
    another learning rate: exit 2 before any compute, the key and both values named, no
    traceback, not one byte of the workdir changed. The same command again: exit 0, kept.
    Bites: no provenance check (the old code printed the lr-2.0 result for lr 0.5, exit 0)."""
    workdir = tmp_path / "w"
    first = runs.tpubench("run", "resnet", *TO_TARGET, f"--workdir={workdir}")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "tpubench: resnet/smoke ended: success (reached the target)" in first.stdout
    assert "  quality     top1_accuracy 0.0000, target >= 0.0 (higher is better)" in first.stdout
    assert "NOT an MLPerf result (mini" in first.stdout
    assert _shown_path(first.stdout, "summary") == workdir / "summary.json"
    assert _shown_path(first.stdout, "metrics") == workdir / "metrics.jsonl"
    assert f"  MLPerf log  {workdir / 'mlperf_log.txt'}\n" in first.stdout
    assert (workdir / "summary.json").is_file() and (workdir / "mlperf_log.txt").is_file()
    assert (workdir / "metrics.jsonl").is_file()

    record = json.loads((workdir / provenance.NAME).read_text())
    expected = config_lib.load("resnet", "smoke", ["--config.eval.target_value=0.0"])
    assert record["config"] == provenance.resolved(expected)
    assert record["config"]["eval"]["target_value"] == 0.0
    (attempt,) = record["attempts"]
    assert attempt["argv"][1:] == ["run", "resnet", *TO_TARGET, f"--workdir={workdir}"]
    assert attempt["resumed"] is False
    versions = attempt["versions"]
    assert versions["jax"] == jax.__version__
    assert versions["python"] == sys.version.split()[0]
    for dist in ("jaxlib", "flax", "optax", "orbax-checkpoint", "mlperf-logging"):
        assert versions[dist] == importlib.metadata.version(dist)
    assert len(attempt["code"]["git_commit"]) == 40  # the tests run from a git checkout
    assert attempt["devices"] == {"platform": "cpu", "kind": "cpu", "count": 1}
    assert attempt["process_count"] == 1

    before = _files(workdir)
    other = runs.tpubench("run", "resnet", *TO_TARGET, f"--workdir={workdir}",
                          "--config.optimizer.learning_rate=0.5")
    assert other.returncode == 2, other.stderr[-3000:]
    assert ("optimizer.learning_rate: 2.0 in the workdir, 0.5 on this command line"
            in other.stderr)
    assert "new --workdir" in other.stderr and "Traceback" not in other.stderr
    assert other.stdout == ""
    assert _files(workdir) == before

    same = runs.tpubench("run", "resnet", *TO_TARGET, f"--workdir={workdir}")
    assert same.returncode == 0, same.stderr[-3000:]
    assert "kept, not rerun" in same.stdout and "success (reached the target)" in same.stdout
    assert _files(workdir) == before


def test_an_aborted_run_says_why_on_stderr_from_an_absl_main(tmp_path):
    """The smoke config trains one step: it cannot reach ResNet's 0.967, so the run is
    aborted, exit 1, and the absl main (tpubench/entry.py) prints the end block and the reason,
    the sample budget, on stderr (issue 38.3: it printed nothing). Bites: entry.main without
    ending.report."""
    workdir = tmp_path / "w"
    proc = runs.run_main("resnet", "smoke", workdir)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "tpubench: resnet/smoke ended: aborted" in proc.stdout
    assert ("tpubench: resnet/smoke was aborted: the sample budget (1 steps, 8 samples) ran out "
            "before the target (top1_accuracy") in proc.stderr
    assert "Traceback" not in proc.stderr
    assert runs.summary(workdir)["status"] == "aborted"


# ---- the pieces, in this process -----------------------------------------------------------
def _smoke():
    return config_lib.load("resnet", "smoke")


def test_differences_name_each_key_with_both_values_and_skip_the_free_ones():
    """Bites: comparing a free key (a compile-cache or data-dir change would refuse a resume),
    or dropping a key present on one side only."""
    stored = provenance.resolved(_smoke())
    current = _smoke()
    current.run.compile_cache = not current.run.compile_cache
    current.data.dir = "/elsewhere"
    current.run.checkpoint_keep = 5
    assert provenance.differences(stored, provenance.resolved(current)) == []
    current.run.seed = 3
    current.model.stage_sizes = (1, 2, 1)
    assert provenance.differences(stored, provenance.resolved(current)) == [
        "model.stage_sizes: [1, 1, 1] in the workdir, [1, 2, 1] on this command line",
        "run.seed: 0 in the workdir, 3 on this command line"]
    assert provenance.differences({"a": 1}, {"a": 1, "b": {"c": 2}}) == [
        'b.c: "(absent)" in the workdir, 2 on this command line']


def test_check_refuses_another_config_and_notes_an_older_workdir(tmp_path, capsys):
    """Bites: check reading the wrong file, or raising for a workdir from before provenance."""
    provenance.write(_smoke(), tmp_path, resumed=False)
    provenance.check(_smoke(), tmp_path)  # the same config: no error
    other = _smoke()
    other.optimizer.learning_rate = 0.5
    with pytest.raises(UsageError, match=r"optimizer\.learning_rate: 2\.0 in the workdir, 0\.5"):
        provenance.check(other, tmp_path)
    provenance.write(_smoke(), tmp_path, resumed=True)  # a resume adds an attempt
    record = provenance.read(tmp_path)
    assert [a["resumed"] for a in record["attempts"]] == [False, True]
    assert not list(tmp_path.glob("*.tmp"))

    old = tmp_path / "old"
    old.mkdir()
    (old / "mlperf_log.txt").write_text("")
    provenance.check(other, old)
    assert "without provenance.json" in capsys.readouterr().err


def _summary(**keys) -> dict:
    base = {"workload": "resnet", "config": "smoke", "status": "aborted", "error": None,
            "target": 0.967, "target_metric": "top1_accuracy", "final_quality": 0.5,
            "run_time_s": 12.0, "steps": 10, "samples": 80}
    return base | keys


def test_why_names_a_nan_a_time_limit_a_budget_and_a_preemption():
    """Each non-success says its own reason; a success says nothing. Bites: a branch reading
    the wrong key (e.g. the budget message for a NaN run)."""
    cfg = _smoke()
    nan = "The training loss became NaN/Inf in the block ending at step 9. Lower the rate."
    assert ending.why(_summary(error=nan), cfg) == f"tpubench: resnet/smoke was aborted: {nan}"
    assert "the sample budget (10 steps, 80 samples) ran out" in ending.why(_summary(), cfg)
    cfg.run.max_time_s = 10.0
    assert "the time limit (run.max_time_s = 10.0 s) ran out at 12.0 s" in ending.why(
        _summary(), cfg)
    preempted = {"status": "preempted", "step": 4, "workdir": "/w", "attempts": 1}
    assert "Rerun the same command to resume" in ending.why(preempted, cfg)
    assert ending.why(_summary(status="success"), cfg) is None
    assert "compliance checker refused" in ending.why(
        _summary(status="success", compliance={"valid": False}, mlperf_log="/w/l"), cfg)
