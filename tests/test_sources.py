"""Each workload's data sources are one table (`Workload.data_sources`, `tpubench.sources`): the
base class dispatches check_data / train_batches / eval_batches through it, and an unknown
`data_source` is a UsageError that lists every known one."""

from __future__ import annotations

import ml_collections
import pytest
import runs

from tpubench import config as config_lib
from tpubench import registry, sources
from tpubench.errors import UsageError
from tpubench.workload import Workload

EXPECTED = {
    "resnet": {"tfds", "mnist5k", "digits"},
    "dlrm": {"criteo_binary", "criteo_tsv", "flights"},
    "transformer": {"tfds", "multi30k"},
    "bert": {"tfrecord", "shakespeare"},
}
# Configs of a workload's other task (`model.task`) have that task's own table.
EXPECTED_BY_TASK = {("bert", "squad"): {"json", "tfds", "shakespeare_qa", "multi30k_qa"}}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_unknown_source_lists_every_known_one(name):
    """Bites: Workload.__init__ not checking the name (the error would come later, or never),
    or `sources.known` leaving out a table entry or synthetic."""
    cls = registry.workload_class(name)
    assert set(cls.data_sources) == EXPECTED[name]
    with pytest.raises(UsageError) as err:
        registry.create(config_lib.load(name, "smoke", {"data.source": "bogus"}))
    message = str(err.value)
    assert f"{name}: unknown data_source 'bogus'" in message
    for source in (*EXPECTED[name], "synthetic"):
        assert f"{source} (" in message, source


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_shipped_config_names_a_source_of_the_table(name):
    """Bites: a config whose data_source the table lacks (renamed in one place only)."""
    for config in config_lib.config_names(name):
        cfg = config_lib.load(name, config)
        expected = EXPECTED_BY_TASK.get((name, cfg.model.get("task", "")), EXPECTED[name])
        assert cfg.data.source == "synthetic" or cfg.data.source in expected, (config,
                                                                              cfg.data.source)
        assert set(registry.create(cfg).data_sources) == expected, config


class _Recorder(Workload):
    """A workload with a two-entry table whose functions record how they were called."""

    name = "recorder"
    calls: list = []
    data_sources = {
        "a": sources.DataSource.of_config(
            "source a",
            lambda config, *args: iter([("train", config.tag, args)]),
            lambda config, *args: iter([("eval", config.tag, args)]),
            check=lambda config: _Recorder.calls.append(("check", config.tag))),
        "b": sources.DataSource(
            "source b",
            lambda w, *args: iter([("train-b", args)]),
            lambda w, *args: iter([("eval-b", args)])),
    }

    def model(self):  # the contract's abstract methods: unused here
        raise NotImplementedError

    batch_spec = loss = optimizer = eval_step = eval_finalize = model


def _recorder(source: str) -> _Recorder:
    return _Recorder(ml_collections.ConfigDict({"data": {"source": source}, "tag": "T"}))


def test_the_base_class_dispatches_through_the_table():
    """The configured entry's functions get the config (of_config) or the workload, and the
    harness's arguments unchanged. Bites: train_batches passing (process_index, start_step)
    in another order, check_data not running the entry's check, or running a lookup for
    "synthetic" (BERT's checkpoint checks run on synthetic configs too)."""
    _Recorder.calls.clear()
    a = _recorder("a")
    a.check_data()
    assert _Recorder.calls == [("check", "T")]
    assert list(a.train_batches(5, 1, 4)) == [("train", "T", (5, 1, 4))]
    assert list(a.eval_batches(1, 4)) == [("eval", "T", (1, 4))]
    b = _recorder("b")
    b.check_data()  # no check: nothing happens
    assert list(b.train_batches(0, 0, 1)) == [("train-b", (0, 0, 1))]
    assert list(b.eval_batches(0, 1)) == [("eval-b", (0, 1))]
    synthetic = _recorder("synthetic")
    synthetic.check_data()  # nothing to check: the harness generates the batches
    assert _Recorder.calls == [("check", "T")]
    with pytest.raises(UsageError, match="no host-side batches"):
        synthetic.train_batches(0, 0, 1)


def test_dlrm_tfds_says_there_is_no_criteo_builder():
    """The reason a user most often asks for tfds: named in the listing of the Criteo sources."""
    with pytest.raises(UsageError, match="tensorflow-datasets has no Criteo 1TB builder"):
        registry.create(config_lib.load("dlrm", "mini", {"data.source": "tfds"}))


def test_cli_unknown_source_exits_2_and_writes_nothing(tmp_path):
    """The user's path: one paragraph, exit status 2, no workdir. Bites: a plain ValueError
    (a traceback and exit 1)."""
    workdir = tmp_path / "w"
    proc = runs.tpubench("run", "resnet", "--config=mini", "--config.data.source=imagenet",
                         f"--workdir={workdir}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "resnet: unknown data_source 'imagenet'" in proc.stderr
    assert "mnist5k (the mini" in proc.stderr
    assert not workdir.exists()
