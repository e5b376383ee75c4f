"""The one registry (`tpubench/registry.py`): names and variants -> workload class and inference
spec, chosen from the config by the stated key; the closed-division tables found through it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tpubench import cli, division, registry
from tpubench import config as config_lib
from tpubench.errors import UsageError
from tpubench.infer import spec as spec_lib
from tpubench.workload import Workload


def test_tpubench_imports_no_workload():
    """Loading the config machinery, the division rules and the registry imports no workload
    module (and no jax): the string lookup is the only way in. Bites: a workload imported by
    division.py (tried)."""
    code = ("import sys; import tpubench.config, tpubench.registry, tpubench.division; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('workloads', 'jax')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("workload,config,entry", [
    ("bert", "smoke", "bert"),
    ("bert", "squad_smoke", "bert/squad"),
    ("bert", "mobilebert_squad_smoke", "bert/squad"),
    ("resnet", "mini", "resnet"),
    ("resnet", "mobilenet_edgetpu_smoke", "resnet/mobilenet_edgetpu"),
    ("ssd", "smoke", "ssd"),
    ("ssd", "mobilenet_v1_mini", "ssd/mobilenet_v1"),
    ("ssd", "mobilenet_v2_mini", "ssd/mobilenet_v2"),
    ("gnmt", "smoke", "gnmt"),
])
def test_the_config_key_picks_the_variant(workload, config, entry):
    assert registry.variant(workload, config_lib.load(workload, config)) == entry


def test_an_unregistered_value_keeps_the_base_entry():
    """A value no entry names is the base workload's to judge (as before the registry had
    variants): e.g. an unknown model.task is pre-training, as the old factory made it."""
    c = config_lib.load("bert", "squad_smoke", {"model.task": "ner"})
    assert registry.variant("bert", c) == "bert"
    assert registry.variant("resnet", config_lib.load("resnet", "mini", {"model.arch": "vgg"})) \
        == "resnet"


def test_create_builds_the_variant_class_and_the_constructor_is_no_factory():
    from workloads.bert.squad_workload import BertSquadWorkload
    from workloads.bert.workload import BertWorkload

    squad = config_lib.load("bert", "squad_smoke")
    assert type(registry.create(squad)) is BertSquadWorkload
    assert type(BertWorkload(squad)) is BertWorkload
    assert type(registry.create(config_lib.load("bert", "smoke"))) is BertWorkload
    assert registry.workload_class("bert") is BertWorkload


def test_variant_names_are_not_cli_names():
    assert "bert/squad" not in registry.names()
    with pytest.raises(UsageError, match="Unknown workload 'bert/squad'"):
        registry.workload_class("bert/squad")


def test_every_entry_resolves_to_its_workload_and_spec():
    for name in registry.names():
        for entry in registry.variants(name) or [name]:
            e = registry._ENTRIES[entry]
            cls = registry._resolve(e.workload)
            assert issubclass(cls, Workload) and cls.name == name, entry
            if e.spec:
                assert callable(registry._resolve(e.spec)), entry
    assert registry.served() == ["bert", "deeplab", "dlrm", "resnet", "rnnt", "ssd", "unet3d"]


def test_the_spec_follows_the_variant():
    from workloads.bert.inference import bert_inference_spec
    from workloads.bert.squad_inference import squad_inference_spec

    assert registry.spec_function("bert", config_lib.load("bert", "squad_smoke")) \
        is squad_inference_spec
    assert registry.spec_function("bert", config_lib.load("bert", "smoke")) is bert_inference_spec
    gnmt = registry.create(config_lib.load("gnmt", "smoke"))
    with pytest.raises(UsageError, match="'gnmt' has no inference spec. Served workloads: bert"):
        spec_lib.inference_spec(gnmt)


def test_closed_tables_are_the_workload_classes():
    assert sorted(division.WORKLOADS) == ["bert", "dlrm", "gnmt", "maskrcnn", "minigo",
                                          "resnet", "ssd", "transformer"]
    for name, table in division.WORKLOADS.items():
        assert table is registry.workload_class(name).closed_tunables
    assert division.WORKLOADS.get("deeplab", {}) == {}
    assert division.WORKLOADS.get("nope", {}) == {}
    assert division.tunable("bert", "optimizer.beta_1") is not None  # bert's own row
    assert division.tunable("gnmt", "optimizer.beta_1") is None  # gnmt | adam has no beta row


def test_list_variants_shows_each_variant_with_its_configs(capsys):
    assert cli.main(["list", "--variants"]) == 0
    out = capsys.readouterr().out
    assert "bert  (variant: model.task; default pretraining)" in out
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("  bert/squad  "))
    assert "BertSquadWorkload" in lines[i]
    assert "squad_full" in lines[i + 1] and ", smoke" not in lines[i + 1]
    assert not any(line.startswith("gnmt") for line in lines)
