"""The whole SSD-ResNet34 of the v0.7 inference reference from its state dict (.npz, .pth or
.onnx). The ImageNet ResNet-34 backbone alone (`model.backbone_checkpoint`, the training
reference's `--pretrained-backbone`) loads through `tpubench.convert.torchvision`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tpubench.convert.boxed import Loader
from tpubench.convert.torchvision import load_backbone, read_state_dict
from tpubench.errors import UsageError

# The v0.7 inference model's state dict (mlcommons/inference vision/classification_and_detection
# python/models/ssd_r34.py `SSD_R34`; base_model_r34.py `ResNet34`): the backbone is
# `model.layer1` = torchvision children [:6] (conv1, bn1, relu, maxpool, layer1, layer2) and
# `model.layer2` = [layer3]; `additional_blocks.{i}` = (conv1x1, relu, conv3x3, relu);
# `loc.{k}`, `conf.{k}` the heads. Their torchvision names, for `load_backbone`:
R34_BACKBONE_PREFIXES = (("model.layer1.0.", "conv1."), ("model.layer1.1.", "bn1."),
                         ("model.layer1.4.", "layer1."), ("model.layer1.5.", "layer2."),
                         ("model.layer2.0.", "layer3."))


def read_any(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """A state dict from .npz, .pth (torch) or .onnx (its initializers, by name)."""
    path = os.fspath(path)
    if path.endswith(".onnx") and os.path.exists(path):
        try:
            import onnx
            from onnx import numpy_helper
        except ImportError as e:
            raise UsageError(f"Reading {path!r} needs the onnx package (pip install onnx).") from e
        graph = onnx.load(path).graph
        return {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    return read_state_dict(path)


def load_ssd_r34(state: dict[str, np.ndarray], params: Any, batch_stats: Any,
                 ) -> tuple[dict, dict]:
    """New (params, batch_stats) of the whole SSD-ResNet34 from the reference's state dict
    (`SSD_R34` names above; a `module.` prefix from DataParallel is dropped). `UsageError`
    naming what is missing or misshapen."""
    state = {k.removeprefix("module."): v for k, v in state.items()}
    torchvision = {}
    for k, v in state.items():
        for ref, tv in R34_BACKBONE_PREFIXES:
            if k.startswith(ref):
                torchvision[tv + k[len(ref):]] = v
    backbone_p, backbone_s = load_backbone(torchvision, params["backbone"],
                                           batch_stats["backbone"])
    loader, out = Loader(state), {"backbone": backbone_p}
    take = loader.take

    def conv(flax_name: str, torch_name: str):
        p = params[flax_name]
        out[flax_name] = {"kernel": take(f"{torch_name}.weight", p["kernel"],
                                         lambda a: a.transpose(2, 3, 1, 0)),
                          "bias": take(f"{torch_name}.bias", p["bias"])}

    extras = sorted(k for k in params if k.startswith("extra") and k.endswith("_conv1"))
    for i in range(len(extras)):
        conv(f"extra{i}_conv1", f"additional_blocks.{i}.0")
        conv(f"extra{i}_conv2", f"additional_blocks.{i}.2")
    heads = sorted(k for k in params if k.startswith("loc"))
    for k in range(len(heads)):
        conv(f"loc{k}", f"loc.{k}")
        conv(f"conf{k}", f"conf.{k}")
    unknown = sorted(set(params) - set(out))
    if loader.missing or loader.wrong or unknown:
        raise UsageError(
            "The SSD-ResNet34 file does not match this model (ssd_r34.py state-dict names): "
            + loader.problems()
            + (f"no source for {', '.join(unknown)}; " if unknown else "")
            + "pass the v0.7 reference's resnet34-ssd1200 weights with --config=r34_1200.")
    return out, {**batch_stats, "backbone": backbone_s}
