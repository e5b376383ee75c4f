"""Bad input of `tpubench infer`: each case is one paragraph on stderr (no traceback, no usage
dump), exit status 2, and nothing written."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tpubench.infer import cli

OK = ["resnet", "--config=mini", "--scenario=Offline", "--batch-sizes=1,8"]


def _without(args: list[str], prefix: str) -> list[str]:
    return [a for a in args if not a.startswith(prefix)]


CASES = {
    "unknown scenario": (_without(OK, "--scenario") + ["--scenario=Batch"],
                         "Unknown scenario 'Batch'. Scenarios: Offline, Server"),
    "unknown profile": (OK + ["--profile=v1.0"], "Unknown --profile='v1.0'. Profiles: quick, v0.7"),
    "unknown mode": (OK + ["--mode=fast"], "Unknown --mode='fast'. Modes: performance, accuracy"),
    "missing scenario": (_without(OK, "--scenario"), "The following arguments are required: "
                         "--scenario"),
    "unknown option": (OK + ["--frobnicate"], "Unrecognized arguments: --frobnicate"),
    "unknown workload": (["nosuch"] + OK[1:], "Unknown workload 'nosuch'. Known workloads: bert"),
    "unknown config": (_without(OK, "--config") + ["--config=huge"], "Unknown config 'huge'"),
    "unknown config key": (OK + ["--config.nokey=3"], "Unknown config key 'nokey'"),
    "bad batch sizes": (_without(OK, "--batch-sizes") + ["--batch-sizes=1,x"],
                        "--batch-sizes must be integers"),
    "zero batch size": (_without(OK, "--batch-sizes") + ["--batch-sizes=0"],
                        "--batch-sizes needs at least one size >= 1"),
    "search outside Server": (OK + ["--server-search=3"], "--server-search applies to "
                              "--scenario=Server only"),
    "negative expected qps": (OK + ["--expected-qps=-5"], "--expected-qps must be >= 0"),
    "bert full (SQuAD not served)": (["bert", "--config=full", "--scenario=Offline"],
                                     "not served as bert-99"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_paragraph_and_exit_2_with_nothing_written(case, tmp_path, capsys):
    """Bites: `_Parser.error` calling argparse's own (usage dump + SystemExit) -> the
    'missing scenario' and 'unknown option' cases raise SystemExit instead of returning 2."""
    args, expected = CASES[case]
    workdir = tmp_path / "out"
    assert cli.main(args + [f"--workdir={workdir}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert err.startswith("tpubench: error: ") and "\n" not in err, err
    assert expected in err
    assert "Traceback" not in err and "usage:" not in err
    assert not workdir.exists()


def test_missing_or_empty_checkpoint_dirs_are_usage_errors(tmp_path, capsys):
    """Bites: dropping the `--params` directory check -> the missing dir reaches orbax."""
    assert cli.main(OK + [f"--params={tmp_path / 'nothing'}", f"--workdir={tmp_path / 'a'}"]) == 2
    assert "is not a directory: pass the --workdir of a finished training run" in (
        capsys.readouterr().err)
    (tmp_path / "empty").mkdir()
    assert cli.main(OK + [f"--params={tmp_path / 'empty'}", f"--workdir={tmp_path / 'b'}"]) == 2
    assert "No checkpoint under" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_workdir_that_is_a_file_or_holds_a_result_is_refused(tmp_path, capsys):
    """Bites: no early workdir check -> the file case fails later with a traceback."""
    afile = tmp_path / "file"
    afile.write_text("x")
    assert cli.main(OK + [f"--workdir={afile}"]) == 2
    assert "is a file; pass a directory" in capsys.readouterr().err
    done = tmp_path / "done"
    done.mkdir()
    (done / "summary.json").write_text("{}")
    assert cli.main(OK + [f"--workdir={done}"]) == 2
    assert "results are never overwritten" in capsys.readouterr().err
    assert afile.read_text() == "x" and sorted(p.name for p in done.iterdir()) == ["summary.json"]


def test_the_tpubench_entry_point_exits_2_without_a_traceback(tmp_path):
    """Through `python -m tpubench.cli infer` (the installed `tpubench` command's module)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench.cli", "infer", *OK, "--profile=nope",
         f"--workdir={tmp_path / 'w'}"], capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Unknown --profile='nope'" in proc.stderr and "Traceback" not in proc.stderr
