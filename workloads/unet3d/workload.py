"""3D U-Net segmentation (nnU-Net, the model of MLPerf Inference v0.7 `3d-unet`): the
contract, nothing else. Deep-supervised Dice + cross-entropy as nnUNetTrainerV2, SGD with
Nesterov momentum and poly decay; mean Dice over the config's regions (`dice.py`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from tpubench.evaluation import EvalOutput, EvalResults
from tpubench.nn.axes import conv_rules
from tpubench.nn.dtypes import compute_dtype
from tpubench.sources import DataSource
from tpubench.workload import Workload
from workloads.unet3d import brats, dice, mni, model

DATA_SOURCES = {
    "mni": DataSource.of_config(
        "the mini: crops of the MNI ICBM152 template and its tissue maps, PyPI package nilearn",
        mni.train_batches, mni.eval_batches, check=mni.check),
    "brats": DataSource.of_config(
        "BraTS 2019 volumes preprocessed by the v0.7 reference (preprocess.py), "
        "config.data.dir", brats.train_batches, brats.eval_batches, check=brats.check),
}


def deep_supervision_weights(n: int) -> jnp.ndarray:
    """nnUNetTrainerV2: 1/2^i for output i (full resolution first), the lowest resolution's
    weight 0, normalised to sum 1."""
    w = jnp.array([1.0 / 2 ** i for i in range(n)])
    if n > 1:
        w = w.at[-1].set(0.0)
    return w / w.sum()


def dice_ce_loss(logits: jax.Array, label: jax.Array, smooth: float = 1e-5) -> jax.Array:
    """nnU-Net's DC_and_CE_loss (batch_dice, do_bg=False, smooth 1e-5): cross-entropy plus the
    negative soft Dice of the foreground classes over the whole batch."""
    num_classes = logits.shape[-1]
    valid = (label != dice.IGNORE).astype(jnp.float32)
    safe = jnp.where(label == dice.IGNORE, 0, label)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, safe)
    ce = jnp.sum(ce * valid) / jnp.maximum(jnp.sum(valid), 1.0)
    probs = jax.nn.softmax(logits, -1) * valid[..., None]
    onehot = jax.nn.one_hot(safe, num_classes) * valid[..., None]
    axes = tuple(range(logits.ndim - 1))
    tp = jnp.sum(probs * onehot, axes)
    fp = jnp.sum(probs * (1 - onehot), axes)
    fn = jnp.sum((1 - probs) * onehot, axes)
    dc = (2 * tp + smooth) / (2 * tp + fp + fn + smooth)
    return ce - jnp.mean(dc[1:])


class UNet3DWorkload(Workload):
    """Volumetric segmentation into `model.num_classes` classes, mean Dice over regions."""

    name = "unet3d"
    mlperf_name = "3d-unet"
    data_sources = DATA_SOURCES

    def model(self) -> model.UNet3D:
        m = self.config.model
        return model.UNet3D(
            num_classes=int(m.num_classes), base_features=int(m.base_features),
            max_features=int(m.max_features), num_pools=int(m.num_pools),
            deep_supervision=bool(m.deep_supervision),
            dtype=compute_dtype(m.dtype, else_float32=True))

    def logical_axis_rules(self) -> tuple[tuple[str, Any], ...]:
        """Conv kernels [d, h, w, in, out] split output channels over "tensor"."""
        return (("conv_d", None),) + conv_rules()

    def regions(self) -> dict[str, tuple[int, ...]]:
        """The Dice regions of this config (BraTS's three, or one per tissue class)."""
        return dice.regions_of(self.config)

    def batch_spec(self, batch_size: int, train: bool) -> dict[str, jax.ShapeDtypeStruct]:
        d = self.config.data
        shape = tuple(d.train_shape if train else d.eval_shape)
        spec = {"inputs": jax.ShapeDtypeStruct((batch_size, *shape, int(d.in_channels)),
                                               jnp.float32),
                "label": jax.ShapeDtypeStruct((batch_size, *shape), jnp.int32)}
        if not train:
            spec["mask"] = jax.ShapeDtypeStruct((batch_size,), jnp.float32)
        return spec

    def loss(self, params, model_state, batch, rng):
        outputs = self.model().apply({"params": params}, batch["inputs"], train=True)
        if not isinstance(outputs, list):
            outputs = [outputs]
        weights = deep_supervision_weights(len(outputs))
        label = batch["label"]
        terms = []
        for i, logits in enumerate(outputs):
            s = 2 ** i  # nnU-Net downsamples the target to each output's resolution (nearest)
            terms.append(dice_ce_loss(logits, label[:, ::s, ::s, ::s]))
        loss = jnp.sum(weights * jnp.stack(terms))
        accuracy = jnp.mean(jnp.argmax(outputs[0], -1) == label)
        return loss, (model_state, {"voxel_accuracy": accuracy, "full_res_loss": terms[0]})

    def optimizer(self) -> optax.GradientTransformation:
        o = self.config.optimizer
        return optax.chain(
            optax.clip_by_global_norm(float(o.clip_norm)),
            optax.add_decayed_weights(float(o.weight_decay)),
            optax.sgd(self.learning_rate, momentum=float(o.momentum), nesterov=True))

    def learning_rate(self, step):
        """nnU-Net's poly schedule: lr * (1 - step / train_steps) ^ 0.9."""
        s = self.config.schedule
        frac = jnp.clip(jnp.asarray(step, jnp.float32) / float(s.train_steps), 0.0, 1.0)
        return float(self.config.optimizer.learning_rate) * (1.0 - frac) ** 0.9

    def predict(self, params, model_state, inputs) -> jax.Array:
        """Per-voxel class (int32) of the full-resolution output (what inference serves)."""
        logits = self.model().apply({"params": params}, inputs, train=False)
        return jnp.argmax(logits, -1).astype(jnp.int32)

    def eval_step(self, params, model_state, batch) -> EvalOutput:
        """Per example, the voxel counts of each region (`dice.counts`); the host divides."""
        pred = self.predict(params, model_state, batch["inputs"])
        return EvalOutput(per_example={"counts": dice.counts(pred, batch["label"],
                                                              self.regions())})

    def eval_finalize(self, results: EvalResults) -> float:
        """Mean Dice as the reference's accuracy script (`dice.mean_dice`)."""
        return dice.mean_dice(results.per_example["counts"])

    def synthetic_batch(self, rng, batch_size):
        spec = self.batch_spec(batch_size, train=True)
        k1, k2 = jax.random.split(rng)
        return {"inputs": jax.random.normal(k1, spec["inputs"].shape),
                "label": jax.random.randint(k2, spec["label"].shape, 0,
                                            int(self.config.model.num_classes))}

    def synthetic_eval_batch(self, rng, batch_size):
        spec = self.batch_spec(batch_size, train=False)
        k1, k2 = jax.random.split(rng)
        return {"inputs": jax.random.normal(k1, spec["inputs"].shape),
                "label": jax.random.randint(k2, spec["label"].shape, 0,
                                            int(self.config.model.num_classes))}

    def mllog_hyperparameters(self) -> dict[str, Any]:
        o = self.config.optimizer
        return {"global_batch_size": int(self.config.data.global_batch_size),
                "opt_name": "sgd_nesterov", "opt_base_learning_rate": float(o.learning_rate),
                "opt_momentum": float(o.momentum), "opt_weight_decay": float(o.weight_decay)}
