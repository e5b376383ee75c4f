"""Subprocess side of the scale tests: runs with as many simulated CPU devices as the test asks
(XLA_FLAGS is set by the caller before JAX starts) and prints one JSON object on its last line.

    python tests/scale_worker.py strategies         # each sharding strategy, 3 steps of a ResNet
    python tests/scale_worker.py save WORKDIR       # train data-parallel, save, dump the state
    python tests/scale_worker.py restore WORKDIR    # restore that checkpoint FSDP, compare
    python tests/scale_worker.py dlrm_eval WORKDIR DATA_DIR N   # one process of a DLRM eval
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import jax
import numpy as np

from tpubench import config as config_lib
from tpubench import mesh as mesh_lib
from tpubench import registry
from tpubench.loops import checkpoint
from tpubench.loops import engine as engine_lib
from tpubench.loops import supervised as train
from tpubench.loops.progress import Progress

jax.config.update("jax_threefry_partitionable", True)

# The smoke ResNet cut to two one-block stages of 16 and 32 filters on 16x16x3 images (compile
# time is what these tests spend), with a schedule long enough that the first steps move the
# params: LARS, lr 2.0 decaying over 10 steps of 16 examples.
BASE = {"data.global_batch_size": 16, "eval.batch_size": 16, "data.train_samples": 160,
        "schedule.warmup_steps": 0, "schedule.train_steps": 10, "data.image_size": 16,
        "model.stage_sizes": (1, 1), "model.num_filters": 16, "run.fsdp_min_size": 4096}
STEPS = 3
# The largest conv kernel, (3, 3, 32, 32) = 9216 values: above fsdp_min_size, so FSDP shards it;
# a BN scale (32,) is below it and stays replicated.
KERNEL = ("params", "BottleneckBlock_1", "Conv_1", "kernel")
BN_SCALE = ("params", "BottleneckBlock_1", "BatchNorm_1", "scale")
BN_MEAN = ("model_state", "batch_stats", "BottleneckBlock_1", "BatchNorm_1", "mean")


def run_in_subprocess(devices: int, *args: str, timeout: int = 600) -> dict[str, Any]:
    """Run this script with `devices` simulated CPU devices (test side); its JSON result."""
    repo = pathlib.Path(__file__).resolve().parent.parent
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    proc = subprocess.run([sys.executable, __file__, *args], env=env, cwd=repo,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def batches(n: int, size: int) -> list[dict[str, np.ndarray]]:
    """`n` fixed host batches of random images and labels (the same in every process)."""
    rng = np.random.default_rng(0)
    return [{"inputs": rng.normal(size=(size, 16, 16, 3)).astype(np.float32),
             "label": rng.integers(0, 10, size).astype(np.int32)} for _ in range(n)]


def _leaf(state: Any, path: tuple[str, ...]) -> Any:
    node = getattr(state, path[0])
    for key in path[1:]:
        node = node[key]
    return node


def _momentum(state: Any, path: tuple[str, ...]) -> Any:
    """The optimizer's momentum ("trace") leaf for the param at `path`."""
    found = [leaf for p, leaf in jax.tree_util.tree_flatten_with_path(state.opt_state)[0]
             if "trace" in jax.tree_util.keystr(p)
             and all(f"['{k}']" in jax.tree_util.keystr(p) for k in path[1:])]
    assert len(found) == 1, found
    return found[0]


def _describe(x: jax.Array) -> dict[str, Any]:
    sharding = x.sharding
    spec = getattr(sharding, "spec", None)
    return {"spec": list(spec) if spec is not None else type(sharding).__name__,
            "shard_shape": list(x.addressable_shards[0].data.shape),
            "devices": len(sharding.device_set)}


def _describe_batch(x: jax.Array) -> dict[str, Any]:
    """How a stacked [K, B, ...] input batch is laid out: its spec, the example rows (axis 1)
    each device holds, and how many devices hold each slice of rows."""
    spec = getattr(x.sharding, "spec", None)
    rows: dict[tuple[int, int], int] = {}
    for shard in x.addressable_shards:
        r = shard.index[1]
        key = (r.start or 0, x.shape[1] if r.stop is None else r.stop)
        rows[key] = rows.get(key, 0) + 1
    return {"spec": [list(a) if isinstance(a, tuple) else a for a in spec]
            if spec is not None else type(x.sharding).__name__,
            "row_slices": sorted(list(k) for k in rows), "holders": sorted(set(rows.values()))}


def run_strategy(overrides: dict[str, Any], devices: list[Any]) -> dict[str, Any]:
    """Train STEPS steps of the smoke ResNet under `overrides`; losses, shardings, BN stats."""
    cfg = config_lib.load("resnet", "smoke", {**BASE, **overrides})
    workload = registry.create(cfg)
    mesh = mesh_lib.build_mesh(cfg, devices=devices)
    eng = engine_lib.create(workload, mesh)
    compiled = eng.compile(1, synthetic=False)
    state = eng.init_state(cfg.run.seed)
    losses, placed = [], None
    with eng.context():
        for batch in batches(STEPS, cfg.data.global_batch_size):
            block = {k: v[None] for k, v in batch.items()}
            on_device = eng.put(block, stacked=True)
            placed = placed or _describe_batch(on_device["inputs"])
            state, metrics = compiled.train(state, on_device)
            losses.append(float(np.ravel(metrics["last_loss"])[0]))  # pmap: one per device
    single = eng.for_checkpoint(state)
    return {
        "losses": losses,
        "mesh": dict(mesh.shape),
        "batch": placed,
        "kernel": _describe(_leaf(state, KERNEL)),
        "kernel_momentum": _describe(_momentum(state, KERNEL)),
        "bn_scale": _describe(_leaf(state, BN_SCALE)),
        "bn_scale_momentum": _describe(_momentum(state, BN_SCALE)),
        "bn_mean": np.asarray(_leaf(single, BN_MEAN)).tolist(),
        "kernel_sum": float(np.asarray(_leaf(single, KERNEL)).sum()),
    }


STRATEGIES: dict[str, tuple[dict[str, Any], int]] = {
    # name: (config overrides, number of devices)
    "single": ({}, 1),
    "data": ({"run.mesh.data": 8}, 8),
    "fsdp": ({"run.mesh.data": 1, "run.mesh.fsdp": -1}, 8),
    "mixed": ({"run.mesh.data": 2, "run.mesh.fsdp": 2, "run.mesh.tensor": 2}, 8),
    "data_bn2": ({"run.mesh.data": 8, "model.bn_span": 2}, 8),
    "pmap": ({"run.parallelism": "pmap"}, 8),
}


def strategies() -> dict[str, Any]:
    """Every strategy of STRATEGIES on the first N devices of this process."""
    return {name: run_strategy(o, jax.devices()[:n]) for name, (o, n) in STRATEGIES.items()}


SAVE_OVERRIDES = {"run.mesh.data": -1}
RESTORE_OVERRIDES = {"run.mesh.data": 1, "run.mesh.fsdp": -1}
SAVED_STEPS = 3


def save(workdir: str) -> dict[str, Any]:
    """Train SAVED_STEPS steps data-parallel on every device, save the state with the loop's own
    `checkpoint.save`, and dump the in-memory state that was saved (every leaf) beside it."""
    cfg = config_lib.load("resnet", "smoke", {**BASE, **SAVE_OVERRIDES})
    workload = registry.create(cfg)
    eng = engine_lib.JitEngine(workload, mesh_lib.build_mesh(cfg))
    compiled = eng.compile(1, synthetic=False)
    state = eng.init_state(cfg.run.seed)
    initial = _flat(jax.device_get(state))
    with eng.context():
        for batch in batches(SAVED_STEPS, cfg.data.global_batch_size):
            state, _ = compiled.train(state, eng.put({k: v[None] for k, v in batch.items()},
                                                     stacked=True))
    progress = Progress(train_s=1.5, history=[{"samples": 48, "quality": 0.25}], attempts=1)
    with checkpoint.manager(workdir) as mgr:
        checkpoint.save(mgr, SAVED_STEPS, eng.for_checkpoint(state), progress)
    saved = _flat(jax.device_get(state))
    np.savez(f"{workdir}/saved.npz", **saved)
    moved = sorted(k for k in saved if not np.array_equal(saved[k], initial[k]))
    return {"mesh": dict(eng.mesh.shape), "saved_kernel": _describe(_leaf(state, KERNEL)),
            "moved": {group: sum(k.startswith(f".{group}") for k in moved)
                      for group in ("step", "params", "opt_state", "model_state", "rng")},
            "leaves": _count_groups(saved)}


def restore(workdir: str) -> dict[str, Any]:
    """Restore the checkpoint of `save` onto an FSDP mesh of this process's devices and compare
    every leaf with the state `save` had in memory (exact: shapes, dtypes, values)."""
    cfg = config_lib.load("resnet", "smoke", {**BASE, **RESTORE_OVERRIDES})
    eng = engine_lib.JitEngine(registry.create(cfg), mesh_lib.build_mesh(cfg))
    with checkpoint.manager(workdir) as mgr:
        state, progress = checkpoint.restore(mgr, eng.abstract_state, eng.state_shardings)
    saved = dict(np.load(f"{workdir}/saved.npz"))
    restored = _flat(jax.device_get(state))
    return {
        "mesh": dict(eng.mesh.shape),
        "kernel": _describe(_leaf(state, KERNEL)),
        "kernel_momentum": _describe(_momentum(state, KERNEL)),
        "missing": sorted(set(saved) - set(restored)),
        "extra": sorted(set(restored) - set(saved)),
        "different": sorted(
            k for k in saved.keys() & restored.keys()
            if saved[k].dtype != restored[k].dtype or saved[k].shape != restored[k].shape
            or not np.array_equal(saved[k], restored[k])),
        "leaves": _count_groups(restored),
        "step": int(state.step),
        "progress": dataclasses.asdict(progress),
    }


def _flat(state: Any) -> dict[str, np.ndarray]:
    """Every leaf of a (host) TrainState by its path, e.g. '.params['Conv_0']['kernel']'."""
    return {jax.tree_util.keystr(p): np.asarray(x)
            for p, x in jax.tree_util.tree_flatten_with_path(state)[0]}


def _count_groups(flat: dict[str, np.ndarray]) -> dict[str, int]:
    return {group: sum(k.startswith(f".{group}") for k in flat)
            for group in ("step", "params", "opt_state", "model_state", "rng")}


def dlrm_eval(workdir: str, data_dir: str, eval_samples: str) -> dict[str, Any]:
    """One process of a DLRM smoke run on the Criteo TSV days in `data_dir` (under
    `tpubench launch local`, or alone): join the cluster, train 2 steps, evaluate on the first
    `eval_samples` rows of day 23. Every process records what `eval_finalize` received (the
    labels and scores of the real rows) and how many rows, padding included, the harness
    gathered, in `workdir/eval_p<index>.npz`."""
    from tpubench.platform import distributed

    distributed.initialize_from_env()  # before any JAX computation
    from tpubench import evaluation
    from workloads.dlrm import workload as dlrm

    finalize, accumulate = dlrm.DLRMWorkload.eval_finalize, evaluation.accumulate
    seen: dict[str, np.ndarray] = {}

    def recording_accumulate(outputs):
        seen["rows"] = np.asarray(sum(len(o.mask) for o in outputs))  # padding included
        return accumulate(outputs)

    def recording_finalize(self, results):
        seen.update(label=results.per_example["label"], score=results.per_example["score"])
        quality = finalize(self, results)
        seen["quality"] = np.asarray(quality)
        return quality

    dlrm.DLRMWorkload.eval_finalize = recording_finalize
    evaluation.accumulate = recording_accumulate
    n = int(eval_samples)
    cfg = config_lib.load("dlrm", "smoke", {
        "data.source": "criteo_tsv", "data.dir": data_dir, "eval.samples": n,
        "eval.every_samples": 64, "run.max_train_samples": 64, "run.mesh.data": -1})
    summary = train.train_and_evaluate(cfg, workdir)
    np.savez(f"{workdir}/eval_p{jax.process_index()}.npz", **seen)
    return {"status": summary["status"], "final_quality": summary["final_quality"],
            "process_count": summary["process_count"], "mesh": summary["mesh"]}


if __name__ == "__main__":
    task, args = sys.argv[1], sys.argv[2:]
    tasks = {"strategies": strategies, "save": save, "restore": restore, "dlrm_eval": dlrm_eval}
    result = tasks[task](*args)
    print(json.dumps(result))
