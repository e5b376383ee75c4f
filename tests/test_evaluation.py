"""The one eval path (`tpubench.evaluation`): the harness, not the workload, applies the eval
mask; training and inference compute the same quality through it; the synthetic eval uses the
workload's own synthetic batches."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpubench import config as config_lib
from tpubench import evaluation, registry
from tpubench import mesh as mesh_lib
from tpubench.infer import spec as spec_lib
from tpubench.loops import checkpoint, engine, steps
from tpubench.loops import feed as data
from tpubench.loops import supervised as train


class _Toy:
    """A workload's eval half that never looks at the mask: per-example hits of argmax(x) on
    the label, a [B, 2] weighted statistic, and per-example rows for the host."""

    def eval_step(self, params, model_state, batch):
        x = batch["x"]
        hit = (jnp.argmax(x, -1) == batch["label"]).astype(jnp.float32)
        return evaluation.EvalOutput(
            sums={"hit": hit, "pair": jnp.stack([hit, 2.0 * x[:, 0]], axis=1)},
            per_example={"first": x[:, 0], "label": batch["label"]})

    def eval_finalize(self, results):
        return results.sums["hit"] / results.examples


def _toy_batches(padding_rng: int | None):
    """Two batches of 4: 6 real examples, then 2 padding rows (mask 0) whose content is drawn
    from `padding_rng` so that they would count as hits (label = argmax) with huge values."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    label = np.array([0, 1, 2, 0, 1, 2, 0, 0], np.int32)
    mask = np.array([1, 1, 1, 1, 1, 1, 0, 0], np.float32)
    if padding_rng is not None:
        pad = np.random.default_rng(padding_rng)
        x[6:] = pad.normal(size=(2, 3)) * 1000
        label[6:] = np.argmax(x[6:], -1)
    return [{"x": x[i:i + 4], "label": label[i:i + 4], "mask": mask[i:i + 4]} for i in (0, 4)]


def test_the_harness_masks_a_workload_that_ignores_the_mask():
    """Padding rows built to be hits with values of ~1000 change nothing: the sums, the example
    count, the per-example rows and the quality equal those of the 6 real examples computed by
    hand, whatever the padding holds.
    Bites: `masked` without `* mask` (hit 2 -> 4) and `accumulate` without dropping the padding
    rows (8 per-example rows, not 6) each failed."""
    toy = _Toy()
    step = jax.jit(evaluation.eval_fn(toy))
    real = {k: np.concatenate([b[k] for b in _toy_batches(None)])[:6] for k in ("x", "label")}
    hits = (np.argmax(real["x"], -1) == real["label"]).astype(np.float64)
    assert hits.sum() < 6  # the real rows are not all hits, the padding rows are
    for padding in (1, 2):
        outputs = jax.device_get([step({}, {}, b) for b in _toy_batches(padding)])
        results = evaluation.accumulate(outputs)
        assert results.examples == 6.0
        assert results.sums["hit"] == hits.sum()
        assert results.sums["pair"] == pytest.approx(hits.sum() + 2 * real["x"][:, 0].sum(),
                                                     rel=1e-6)
        np.testing.assert_array_equal(results.per_example["first"], real["x"][:, 0])
        np.testing.assert_array_equal(results.per_example["label"], real["label"])
        assert evaluation.quality(toy, outputs) == hits.sum() / 6


def test_the_jit_engine_path_masks_a_real_workload():
    """ResNet's eval_step returns unmasked per-example hits; through the engine's compiled-step
    path (steps.make_eval_step, JitEngine.eval_to_host) three padding rows relabelled to the
    model's own prediction (so each would be a hit) leave the top-1 equal to the hand top-1
    of the five real rows.
    Bites: `masked` without `* mask` (the 3 padding hits counted) failed."""
    cfg = config_lib.load("resnet", "smoke")
    w = registry.create(cfg)
    eng = engine.JitEngine(w, mesh_lib.build_mesh(cfg))
    state = eng.init_state(cfg.run.seed)
    batch = next(data.synthetic_eval_batches(w, 1, 1))
    logits = w.model().apply({"params": state.params, **state.model_state}, batch["inputs"],
                             train=False)
    pred = np.asarray(np.argmax(logits, -1))
    batch["mask"] = np.array([1, 1, 1, 1, 1, 0, 0, 0], np.float32)
    batch["label"] = np.where(batch["mask"] > 0, (pred + 1) % cfg.model.num_classes, pred)
    batch["label"][0] = pred[0]  # one real hit
    batch["label"] = batch["label"].astype(np.int32)
    with eng.context():
        out = jax.jit(steps.make_eval_step(w))(state, eng.put(batch, stacked=False))
    assert evaluation.quality(w, eng.eval_to_host([out])) == pytest.approx(1 / 5)


def test_eval_step_outputs_must_be_per_example():
    """A batch-reduced scalar (a workload summing, and maybe forgetting the mask) and the old
    dict return are rejected at trace time with the contract in the message.
    Bites: dropping the shape check in `masked` let the scalar through."""
    batch = _toy_batches(None)[0]

    class Reduced(_Toy):
        def eval_step(self, params, model_state, batch):
            out = super().eval_step(params, model_state, batch)
            return out.replace(sums={"hit": jnp.sum(out.sums["hit"])})

    class Dict(_Toy):
        def eval_step(self, params, model_state, batch):
            return {"hit": jnp.sum(batch["x"])}

    with pytest.raises(ValueError, match="must be per example"):
        jax.jit(evaluation.eval_fn(Reduced()))({}, {}, batch)
    with pytest.raises(TypeError, match="EvalOutput"):
        jax.jit(evaluation.eval_fn(Dict()))({}, {}, batch)


def test_synthetic_eval_batches_are_the_workloads_own():
    """DLRM's synthetic eval labels are its synthetic_batch's Bernoulli 0/1 clicks (no
    threshold needed), BERT's masked-LM ids span its vocabulary (not just 0/1), the
    transformer's have the eval batch's own shapes; each batch is deterministic in the seed,
    different per batch and per process, with an all-ones mask.
    Bites: the previous generator (uniform floats for float labels, ids in
    [0, max(num_classes, 2))) failed (DLRM's labels were not 0/1)."""
    dlrm = registry.create(config_lib.load("dlrm", "smoke"))
    first, second = data.synthetic_eval_batches(dlrm, 2, 1)
    assert set(np.unique(first["label"])) == {0.0, 1.0}
    assert first["mask"].tolist() == [1.0] * dlrm.config.eval.batch_size
    assert not np.array_equal(first["dense"], second["dense"])
    again = next(data.synthetic_eval_batches(dlrm, 1, 1))
    np.testing.assert_array_equal(again["sparse"], first["sparse"])
    other = next(data.synthetic_eval_batches(dlrm, 1, 2, 1))
    assert len(other["label"]) == dlrm.config.eval.batch_size // 2
    assert not np.array_equal(other["dense"], first["dense"][: len(other["label"])])

    bert = registry.create(config_lib.load("bert", "smoke"))
    batch = next(data.synthetic_eval_batches(bert, 1, 1))
    spec = bert.batch_spec(bert.config.eval.batch_size, train=False)
    assert {k: (v.shape, v.dtype) for k, v in batch.items()} == {
        k: (s.shape, s.dtype) for k, s in spec.items()}
    assert batch["masked_lm_ids"].max() > 2

    transformer = registry.create(config_lib.load("transformer", "smoke"))
    batch = next(data.synthetic_eval_batches(transformer, 1, 1))
    spec = transformer.batch_spec(transformer.config.eval.batch_size, train=False)
    assert {k: (v.shape, v.dtype) for k, v in batch.items()} == {
        k: (s.shape, s.dtype) for k, s in spec.items()}


def _digits_run(tmp_path, parallelism: str):
    """One step of the ResNet smoke model on the sklearn digits: 360 eval examples in batches
    of 128, so the third batch holds 24 padding rows."""
    cfg = config_lib.load("resnet", "smoke", {
        "data.source": "digits", "data.dataset": "digits", "data.image_size": 8,
        "data.image_channels": 1,
        "eval.batch_size": 128, "eval.samples": 360, "data.train_samples": 1437,
        "run.parallelism": parallelism})
    summary = train.train_and_evaluate(cfg, tmp_path / parallelism)
    w = registry.create(cfg)
    params, model_state = checkpoint.restore_variables(tmp_path / parallelism, w)
    return summary, w, params, model_state


@pytest.mark.parametrize("parallelism", ["jit", "pmap"])
def test_training_and_inference_report_the_same_quality(tmp_path, parallelism):
    """The quality a training run logs (engine eval step, eval_to_host) equals the inference
    harness's reference (`training_eval_quality` on the saved parameters) and the top-1 of the
    360 held-out digits computed here from the model's logits.
    Bites: `examples` counting every row (384) instead of the mask (360) failed (jit: 0.0365
    reported, 14/360 = 0.0389 by hand)."""
    summary, w, params, model_state = _digits_run(tmp_path, parallelism)
    assert summary["steps"] == 1 and summary["parallelism"] == parallelism
    quality = spec_lib.training_eval_quality(w, params, model_state)
    assert summary["final_quality"] == quality
    correct = count = 0
    for b in w.eval_batches(0, 1):
        logits = w.model().apply({"params": params, **model_state}, b["inputs"], train=False)
        keep = np.asarray(b["mask"]) > 0
        correct += int(((np.argmax(logits, -1) == b["label"]) & keep).sum())
        count += int(keep.sum())
    assert count == 360
    assert quality == pytest.approx(correct / 360, abs=1e-12)
