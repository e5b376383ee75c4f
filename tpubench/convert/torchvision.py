"""ImageNet-pretrained ResNet backbones from torchvision's state dicts (SSD's ResNet-34,
Mask R-CNN's ResNet-50).

The SSD reference (mlcommons/training single_stage_detector/ssd base_model.py `ResNet34`,
train.py `--pretrained-backbone`) loads torchvision's `resnet34` state dict
(resnet34-333f7ec4.pth):
`conv1.weight` [out, in, h, w], `bn1.{weight,bias,running_mean,running_var}`,
`layer{1,2,3}.{j}.conv{1,2}.weight`, `...bn{1,2}.*`, `...downsample.0.weight`,
`...downsample.1.*` (layer4 and fc are unused, as conv5 is removed).

tpubench reads that state dict as a `.npz` of the same names (one line with torch:
`np.savez("resnet34.npz", **{k: v.numpy() for k, v in torch.load("resnet34-333f7ec4.pth")
.items()})`), or the `.pth` itself when torch is importable. Conv kernels go from torch's
[out, in, h, w] to Flax's [h, w, in, out]; batch-norm weight/bias to scale/bias, running
mean/var to the batch stats. Every backbone parameter must be in the file with the right
shape, else `UsageError` names what does not match. Mask R-CNN (workloads/maskrcnn) loads its
ResNet-50 body from torchvision's `resnet50` state dict the same way (`load_backbone_file`,
`network="resnet50"`). The backbone modules carry torchvision's names (`_torch_prefix`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tpubench.convert.boxed import Loader
from tpubench.errors import UsageError

# The torchvision ImageNet networks whose state dicts `load_backbone` reads -> the part of
# them the models keep (for messages).
NETWORKS = {"resnet34": "ResNet-34 conv1..layer3 (SSD)", "resnet50": "ResNet-50 conv1..layer4"}


def read_state_dict(path: str | os.PathLike, network: str = "resnet34",
                    ) -> dict[str, np.ndarray]:
    """name -> array of a torchvision state dict saved as .npz (or .pth with torch);
    `network` (a NETWORKS key) names the weights a UsageError asks for."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UsageError(f"Backbone file {path!r} does not exist. Pass the ImageNet "
                         f"{network} weights with --config.model.backbone_checkpoint=FILE (.npz "
                         "of the torchvision state dict; see tpubench/convert/torchvision.py).")
    if path.endswith(".npz"):
        with np.load(path) as f:
            return {k: f[k] for k in f.files}
    try:
        import torch
    except ImportError as e:
        raise UsageError(
            f"{path!r} is not a .npz and torch is not installed to read it. Convert it once "
            f"where torch is: np.savez('{network}.npz', **{{k: v.numpy() for k, v in "
            "torch.load(PTH).items()}) and pass the .npz.") from e
    return {k: v.numpy() for k, v in torch.load(path, map_location="cpu").items()}


def _torch_prefix(flax_path: tuple[str, ...]) -> str:
    """The torch module name of a backbone module path: ("conv1",) -> "conv1",
    ("layer2_0", "downsample_bn") -> "layer2.0.downsample.1"."""
    if len(flax_path) == 1:
        return flax_path[0]
    block, layer = flax_path
    stage, index = block[len("layer"):].split("_")
    layer = {"downsample_conv": "downsample.0", "downsample_bn": "downsample.1"}.get(layer, layer)
    return f"layer{stage}.{index}.{layer}"


def load_backbone_file(path: str | os.PathLike, params: Any, model_state: Any,
                       network: str = "resnet34") -> tuple[dict, dict]:
    """(params, model_state) with the backbone (`params["backbone"]` and
    `model_state["batch_stats"]["backbone"]`) from the torchvision `network` state dict at
    `path`, the rest as given: `model.backbone_checkpoint` of ssd and maskrcnn."""
    new_p, new_s = load_backbone(read_state_dict(path, network), params["backbone"],
                                 model_state["batch_stats"]["backbone"], network)
    return ({**params, "backbone": new_p},
            {**model_state, "batch_stats": {**model_state["batch_stats"], "backbone": new_s}})


def load_backbone(state: dict[str, np.ndarray], params: Any, batch_stats: Any,
                  network: str = "resnet34") -> tuple[dict, dict]:
    """New (params["backbone"], batch_stats["backbone"]) with the state dict's values; the
    given trees give the names and shapes (numpy or abstract arrays); `network` (a NETWORKS
    key) names the file a UsageError asks for."""
    loader = Loader(state)
    take = loader.take

    def walk(p, s, path):
        if "kernel" in p:  # a conv
            prefix = _torch_prefix(path)
            return {"kernel": take(f"{prefix}.weight", p["kernel"],
                                   lambda a: a.transpose(2, 3, 1, 0))}, None
        if "scale" in p:  # a batch norm
            prefix = _torch_prefix(path)
            return ({"scale": take(f"{prefix}.weight", p["scale"]),
                     "bias": take(f"{prefix}.bias", p["bias"])},
                    {"mean": take(f"{prefix}.running_mean", s["mean"]),
                     "var": take(f"{prefix}.running_var", s["var"])})
        out_p, out_s = {}, {}
        for k in p:
            sub_p, sub_s = walk(p[k], (s or {}).get(k, {}), path + (k,))
            out_p[k] = sub_p
            if sub_s is not None:
                out_s[k] = sub_s
        return out_p, out_s

    new_params, new_stats = walk(params, batch_stats, ())
    if loader.missing or loader.wrong:
        raise UsageError(
            f"The backbone file does not match {NETWORKS[network]} of this model: "
            f"{loader.problems()}pass torchvision's {network} state dict "
            "(tpubench/convert/torchvision.py).")
    return new_params, new_stats
