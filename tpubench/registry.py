"""Workload name -> its class. Imports are lazy so `tpubench list` stays fast."""

from __future__ import annotations

import importlib

import ml_collections

from tpubench.errors import UsageError
from tpubench.workload import Workload

# name -> "module:Class". One line per workload.
_WORKLOADS = {
    "transformer": "workloads.transformer.workload:TransformerWorkload",
    "gnmt": "workloads.gnmt.workload:GNMTWorkload",
    "resnet": "workloads.resnet.workload:ResNetWorkload",
    "bert": "workloads.bert.workload:BertWorkload",
    "dlrm": "workloads.dlrm.workload:DLRMWorkload",
    "rnnt": "workloads.rnnt.workload:RNNTWorkload",
    "minigo": "workloads.minigo.workload:MiniGoWorkload",
    "ssd": "workloads.ssd.workload:SSDWorkload",
    "maskrcnn": "workloads.maskrcnn.workload:MaskRCNNWorkload",
    "unet3d": "workloads.unet3d.workload:UNet3DWorkload",
    "deeplab": "workloads.deeplab.workload:DeepLabWorkload",
}


def names() -> list[str]:
    """The registered workload names, sorted."""
    return sorted(_WORKLOADS)


def workload_class(name: str) -> type[Workload]:
    """The Workload subclass registered as `name`; `UsageError` if there is none."""
    if name not in _WORKLOADS:
        raise UsageError(
            f"Unknown workload {name!r}. Known workloads: {', '.join(names())}. "
            "Run `tpubench list` to see them with their targets and configs."
        )
    module, cls = _WORKLOADS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def create(config: ml_collections.ConfigDict) -> Workload:
    """Instantiate the workload that `config.workload` names."""
    return workload_class(config.workload)(config)
