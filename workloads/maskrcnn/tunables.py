"""What closed division lets a `--config.KEY=VALUE` override change in the Mask R-CNN MLPerf config.

`CLOSED_TUNABLES` (its workload class's `closed_tunables`): the settings the MLPerf Training Rules
v0.7 leave free for this benchmark, each with the rule it comes from.
`tpubench.division` applies it, with the harness-wide `HARNESS` table.
"""

from __future__ import annotations

from tpubench.mlperf.tunables import RULES, Tunable

CLOSED_TUNABLES: dict[str, Tunable] = {
    "model.backbone_checkpoint": Tunable(
        f"{RULES}, Data State at Start of Run: where the reference's ImageNet-pretrained "
        "ResNet-50 file lives (maskrcnn-benchmark MODEL.WEIGHT), not what it is"),
    "data.annotations_dir": Tunable(
        f"{RULES}, Data State at Start of Run: \"Data can start on any durable storage "
        "system\" (where COCO's instances JSON files live, not what they are)"),
}
