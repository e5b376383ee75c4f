"""`tpubench prepare`: offline preprocessing before the first run, and runs that refuse to start
without it (the Transformer mini on real Multi30k; the full pipeline is in test_transformer)."""

import json

import numpy as np
import pytest

from tpubench import cli
from tpubench import config as config_lib
from tpubench.datasets import prepared_text as prepared
from tpubench.datasets import translation as ip
from tpubench.errors import UsageError
from tpubench.loops import supervised as train
from tpubench.prepare import main as prepare_main
from tpubench.workload import Workload
from workloads.transformer.workload import TransformerWorkload


def _mini(shared_data_dir, cache_dir, **overrides):
    c = config_lib.load("transformer", "mini")
    config_lib.apply_overrides(
        c, {"data.dir": str(shared_data_dir), "data.cache_dir": str(cache_dir), **overrides})
    return c


def test_prepare_writes_the_mini_data_once_with_its_counts(shared_data_dir, tmp_path, capsys):
    """`tpubench prepare transformer --config=mini` tokenizes and packs Multi30k into a
    directory with a manifest; the run's train_samples/eval_samples come from it; every kept
    pair sits in exactly one packed row; a second prepare keeps the files.
    Bites: dropping the last partial row in pack_rows, or a train_samples constant in the
    config, fails the counts."""
    cache = tmp_path / "cache"
    argv = ["prepare", "transformer", "--config=mini", f"--config.data.dir={shared_data_dir}",
            f"--config.data.cache_dir={cache}"]
    assert cli.main(argv) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["prepared"] is True
    c = _mini(shared_data_dir, cache)
    d = prepared.directory(c)
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["train_corpus_pairs"] == [29000] and manifest["train_pairs_kept"] == 29000
    assert manifest["eval_examples"] == 1000 and manifest["vocab_origin"] == "sentencepiece"
    sources, targets, rows = prepared.load_train(c)
    assert len(sources) == len(targets) == 29000
    assert sorted(np.concatenate(rows).tolist()) == list(range(29000))
    assert manifest["train_rows"] == len(rows)
    pairs = ip.Pairs(sources, targets, [])
    for row in rows[:200]:  # every row fits max_len on both sides
        assert sum(len(pairs.sources[i]) for i in row) <= c.data.max_len
        assert sum(len(pairs.targets[i]) for i in row) <= c.data.max_len
    workload = TransformerWorkload(c)
    workload.check_data()
    assert workload.train_samples == len(rows) and workload.eval_samples == 1000
    eval_sources, refs = prepared.load_eval(c)
    assert len(refs) == 1000 and refs[0] == ip.read_multi30k(str(shared_data_dir), "test", "en")[0]
    assert workload.eval_input_len == max(len(s) for s in eval_sources)
    mtimes = {p.name: p.stat().st_mtime_ns for p in d.iterdir()}
    assert prepare_main(argv[1:]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in d.iterdir()} == mtimes


def test_a_run_without_prepared_data_fails_before_any_compute(shared_data_dir, tmp_path):
    """Bites: preparing on demand inside the run (manifest() calling prepare(), as the old
    tokenizer cache did) lets the run start and write its log."""
    c = _mini(shared_data_dir, tmp_path / "empty_cache")
    with pytest.raises(UsageError, match="tpubench prepare transformer --config=mini"):
        train.train_and_evaluate(c, tmp_path / "run")
    assert not (tmp_path / "run" / "mlperf_log.txt").exists()


def test_a_different_data_config_needs_its_own_preparation(shared_data_dir, tmp_path):
    """A data-changing override (max_len) names another directory; a run-only one (seed)
    does not. Bites: a digest that ignores max_len would reuse rows packed for another
    length."""
    base = _mini(shared_data_dir, tmp_path)
    assert prepared.directory(base) == prepared.directory(
        _mini(shared_data_dir, tmp_path, **{"run.seed": 3}))
    assert prepared.directory(base) != prepared.directory(
        _mini(shared_data_dir, tmp_path, **{"data.max_len": 32}))


def test_eval_width_shorter_than_the_longest_prepared_source_is_refused(shared_data_dir,
                                                                         tmp_path):
    """Bites: silently truncating eval inputs (the old max_eval_input_len=48 clipping)."""
    c = _mini(shared_data_dir, tmp_path)
    TransformerWorkload(c).prepare()
    longest = prepared.manifest(c)["max_eval_source_len"]
    config_lib.apply_overrides(c, {"data.max_eval_input_len": longest - 1})
    with pytest.raises(UsageError, match="never truncated"):
        TransformerWorkload(c).check_data()


@pytest.mark.parametrize("argv,match", [
    ([], "Usage: tpubench prepare"),
    (["transformer"], "Usage: tpubench prepare"),
    (["nosuchworkload", "--config=mini"], "nosuchworkload"),
    (["transformer", "--config=mini", "--bogus"], "unrecognized arguments --bogus"),
    (["transformer", "--config=mini", "--config.no_such_key=1"], "no_such_key"),
])
def test_bad_prepare_input_is_a_usage_error(argv, match, capsys, tmp_path, monkeypatch):
    """Exit status 2 with one paragraph, nothing written. Bites: letting argparse's SystemExit
    escape, or accepting stray arguments."""
    monkeypatch.chdir(tmp_path)  # restored afterwards: later tests use relative paths
    with pytest.raises(UsageError, match=match):
        prepare_main(argv)
    assert cli.main(["prepare", *argv]) == 2
    assert "tpubench: error:" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_workloads_without_offline_preprocessing_prepare_nothing():
    """The contract's default hook is a no-op (the other workloads have nothing to prepare)."""
    assert Workload.prepare.__doc__ and "tpubench prepare" in Workload.prepare.__doc__
    c = config_lib.load("resnet", "smoke")
    from tpubench import registry

    c.workload = "resnet"
    assert registry.create(c).prepare() is None
