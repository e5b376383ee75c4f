"""The one table of workloads: a name, or a variant of it, -> its Workload class and the function
that builds its `InferenceSpec` (`tpubench.infer.spec`).

Both are "module:attribute" strings imported only when asked for: tpubench never imports a
workload (this string lookup is the one way in), and `tpubench list` stays fast.

Variants (AlgoPerf style: explicit entries, no factory). A workload may name one config key in
`VARIANT_KEYS`; a config whose value V of that key has an entry "<name>/V" gets that entry's
class and spec, any other value the plain name's (its default, and values no entry names: the
workload itself judges those, as it always did). E.g. `model.task = "squad"` (bert's `squad_*`
configs) selects "bert/squad", the SQuAD fine-tuning workload; `model.arch =
"mobilenet_edgetpu"` selects "resnet/mobilenet_edgetpu", the same class and spec function as
"resnet", listed so that `tpubench list --variants` shows which configs are which benchmark.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Any

import ml_collections

from tpubench.errors import UsageError

if TYPE_CHECKING:
    from tpubench.workload import Workload


@dataclasses.dataclass(frozen=True)
class Entry:
    """One registered workload or variant: where its class and its inference spec live."""

    workload: str  # "module:Class"
    spec: str | None = None  # "module:function(workload) -> InferenceSpec"; None: not served
    about: str = ""  # one line for `tpubench list --variants` (variants only)


_BERT = "workloads.bert.workload:BertWorkload"
_RESNET = "workloads.resnet.workload:ResNetWorkload"
_RESNET_SPEC = "workloads.resnet.inference:resnet_inference_spec"
_SSD = "workloads.ssd.workload:SSDWorkload"
_SSD_SPEC = "workloads.ssd.inference:ssd_inference_spec"

# name or "name/variant" -> Entry. One line per workload, one more per variant.
_ENTRIES: dict[str, Entry] = {
    "transformer": Entry("workloads.transformer.workload:TransformerWorkload"),
    "gnmt": Entry("workloads.gnmt.workload:GNMTWorkload"),
    "resnet": Entry(_RESNET, _RESNET_SPEC, "ResNet-50 v1.5 (resnet; served as resnet50)"),
    "resnet/mobilenet_edgetpu": Entry(
        _RESNET, _RESNET_SPEC, "MobileNet-EdgeTPU on the same data (served as mobilenet-edgetpu)"),
    "bert": Entry(_BERT, "workloads.bert.inference:bert_inference_spec",
                  "masked-LM + next-sentence pre-training (bert)"),
    "bert/squad": Entry(
        "workloads.bert.squad_workload:BertSquadWorkload",
        "workloads.bert.squad_inference:squad_inference_spec",
        "fine-tuning on SQuAD v1.1 (served as bert-99 / bert-99.9)"),
    "dlrm": Entry("workloads.dlrm.workload:DLRMWorkload",
                  "workloads.dlrm.inference:dlrm_inference_spec"),
    "rnnt": Entry("workloads.rnnt.workload:RNNTWorkload",
                  "workloads.rnnt.inference:rnnt_inference_spec"),
    "minigo": Entry("workloads.minigo.workload:MiniGoWorkload"),
    "ssd": Entry(_SSD, _SSD_SPEC, "SSD-ResNet34 (ssd; served as ssd-resnet34)"),
    "ssd/mobilenet_v1": Entry(_SSD, _SSD_SPEC, "SSD-MobileNet v1 (served as ssd-mobilenet)"),
    "ssd/mobilenet_v2": Entry(_SSD, _SSD_SPEC,
                              "SSD-MobileNet v2, MLPerf Mobile's (served as ssd-mobilenetv2)"),
    "maskrcnn": Entry("workloads.maskrcnn.workload:MaskRCNNWorkload"),
    "unet3d": Entry("workloads.unet3d.workload:UNet3DWorkload",
                    "workloads.unet3d.inference:unet3d_inference_spec"),
    "deeplab": Entry("workloads.deeplab.workload:DeepLabWorkload",
                     "workloads.deeplab.inference:deeplab_inference_spec"),
}

# name -> (the config key whose value picks the variant, its default value).
VARIANT_KEYS: dict[str, tuple[str, str]] = {
    "bert": ("model.task", "pretraining"),
    "resnet": ("model.arch", "resnet"),
    "ssd": ("model.backbone", "resnet34"),
}


# name -> its MLPerf benchmark's name where the two differ: the Workload class's `mlperf_name`,
# here too so that `tpubench list` names it without importing the workload (and JAX);
# tests/test_cli.py checks that the two agree.
_MLPERF_NAMES = {"deeplab": "deeplabv3", "unet3d": "3d-unet"}


def _resolve(ref: str) -> Any:
    module, attr = ref.split(":")
    return getattr(importlib.import_module(module), attr)


def names() -> list[str]:
    """The registered workload names (no variants), sorted."""
    return sorted(n for n in _ENTRIES if "/" not in n)


def variants(name: str) -> list[str]:
    """The entries of workload `name` when it has variants: `name` first, then "name/V"
    sorted; [] for a workload without variants."""
    found = sorted(n for n in _ENTRIES if n.startswith(name + "/"))
    return [name, *found] if found else []


def describe(entry: str) -> tuple[str, str]:
    """(class name, one-line description) of a registered name or variant, without importing
    it."""
    e = _ENTRIES[entry]
    return e.workload.split(":")[1], e.about


def _check_name(name: str) -> None:
    if name not in _ENTRIES or "/" in name:
        raise UsageError(
            f"Unknown workload {name!r}. Known workloads: {', '.join(names())}. "
            "Run `tpubench list` to see them with their targets and configs."
        )


def mlperf_name(name: str) -> str:
    """The MLPerf benchmark name of workload `name` (its class's `mlperf_name`), without
    importing the workload; `UsageError` for an unknown name."""
    _check_name(name)
    return _MLPERF_NAMES.get(name, name)


def variant(name: str, config: ml_collections.ConfigDict) -> str:
    """The entry that `config` selects under workload `name`: "name/V" when `VARIANT_KEYS`
    names a key whose value V in `config` has that entry, else `name` (module docstring)."""
    _check_name(name)
    if name not in VARIANT_KEYS:
        return name
    key, default = VARIANT_KEYS[name]
    node: Any = config
    for part in key.split("."):
        node = node.get(part, None) if node is not None else None
    value = default if node is None else str(node)
    return f"{name}/{value}" if f"{name}/{value}" in _ENTRIES else name


def workload_class(name: str) -> type[Workload]:
    """The Workload class registered as `name` (not a variant); `UsageError` if there is
    none."""
    _check_name(name)
    return _resolve(_ENTRIES[name].workload)


def class_for(config: ml_collections.ConfigDict) -> type[Workload]:
    """The Workload class of `config`: `config.workload`'s, in the variant `config` selects."""
    return _resolve(_ENTRIES[variant(config.workload, config)].workload)


def create(config: ml_collections.ConfigDict) -> Workload:
    """Instantiate the workload that `config.workload` names, in the variant `config` selects
    (`variant`): e.g. the SQuAD workload for a bert config with `model.task = "squad"`."""
    return class_for(config)(config)


def served() -> list[str]:
    """Names of the workloads that have an inference spec (in some variant), sorted."""
    return sorted({n.split("/")[0] for n, e in _ENTRIES.items() if e.spec})


def spec_function(name: str, config: ml_collections.ConfigDict) -> Any | None:
    """The `(workload) -> InferenceSpec` function of workload `name` in the variant `config`
    selects, or None when it is not served (or not registered); `UsageError` when its module
    cannot be imported (a dependency missing)."""
    if name not in names():
        return None
    ref = _ENTRIES[variant(name, config)].spec
    if ref is None:
        return None
    module = ref.split(":")[0]
    try:
        return _resolve(ref)
    except ModuleNotFoundError as e:
        raise UsageError(f"The inference spec of {name!r} ({module}) is not available: {e}") from e
