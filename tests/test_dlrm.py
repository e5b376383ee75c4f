"""DLRM (MLPerf `dlrm`): full-scale shape and sharding, readers, one-step runs, compliance."""

import json
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from jax.sharding import PartitionSpec as P
from sklearn.metrics import roc_auc_score

from tpubench import config as config_lib
from tpubench import evaluation, registry
from tpubench import mesh as mesh_lib
from tpubench.errors import UsageError
from tpubench.loops import steps
from tpubench.loops import supervised as train
from tpubench.mlperf import mllog
from workloads.dlrm import criteo, flights
from workloads.dlrm.configs import full, mini
from workloads.dlrm.model import dot_interaction

# Reference DLRM for Criteo 1TB at max-ind-range 40M: 26 x 128 embeddings + the two MLPs.
EMBEDDING_PARAMS = 24_034_227_072
BOTTOM_MLP_PARAMS = (13 * 512 + 512) + (512 * 256 + 256) + (256 * 128 + 128)  # 171,392
TOP_MLP_PARAMS = (479 * 1024 + 1024) + (1024 * 1024 + 1024) + (1024 * 512 + 512) + (
    512 * 256 + 256) + (256 + 1)  # 2,197,505


def _workload(name: str, **overrides):
    return registry.create(config_lib.load("dlrm", name, overrides))


def _abstract_params(workload):
    return jax.eval_shape(steps.boxed_init_fn(workload), jax.random.PRNGKey(0)).params


def _count(params) -> int:
    return sum(math.prod(x.shape) for x in jax.tree.leaves(nn.meta.unbox(params)))


def test_full_config_has_the_reference_parameter_count():
    assert sum(full.CRITEO_1TB_TABLE_SIZES) * 128 == EMBEDDING_PARAMS
    assert max(full.CRITEO_1TB_TABLE_SIZES) <= 40_000_000
    unpadded = _workload("full", **{"run.embedding_rows_multiple": 1})
    assert _count(_abstract_params(unpadded)) == 24_036_595_969
    assert EMBEDDING_PARAMS + BOTTOM_MLP_PARAMS + TOP_MLP_PARAMS == 24_036_595_969
    stored = _count(_abstract_params(_workload("full")))
    assert stored == 24_039_181_313  # sharded tables padded to 4,096-row multiples
    assert stored / 24_036_595_969 - 1 < 2e-4


def test_full_config_top_mlp_reads_the_479_wide_interaction():
    params = nn.meta.unbox(_abstract_params(_workload("full")))
    assert params["top_mlp"]["dense_0"]["kernel"].shape == (479, 1024)
    assert params["bottom_mlp"]["dense_0"]["kernel"].shape == (13, 512)
    assert params["embedding_0"].shape == (39_886_848, 128)  # 39,884,406 padded to 4,096k


def test_full_config_row_shards_large_tables_and_replicates_small_ones():
    workload = _workload("full")
    boxed = _abstract_params(workload)
    specs = nn.logical_to_mesh(nn.get_partition_spec(boxed),
                               mesh_lib.rules(workload.logical_axis_rules()))
    sharded = {i for i, rows in enumerate(full.CRITEO_1TB_TABLE_SIZES) if rows >= 65536}
    assert sharded == {0, 9, 10, 11, 19, 20, 21, 22}
    for i in range(26):
        expected = P(("data", "fsdp"), None) if i in sharded else P(None, None)
        assert specs[f"embedding_{i}"] == expected, i
        assert boxed[f"embedding_{i}"].value.shape[0] % (4096 if i in sharded else 1) == 0


def test_dot_interaction_is_the_strict_lower_triangle_after_the_dense_vector():
    rng = np.random.default_rng(0)
    bottom, emb = rng.normal(size=(2, 4)), rng.normal(size=(2, 3, 4))
    out = np.asarray(dot_interaction(jnp.asarray(bottom), jnp.asarray(emb)))
    vectors = np.concatenate([bottom[:, None], emb], axis=1)
    pairs = [vectors[:, i] @ vectors[:, j].T for i in range(4) for j in range(i)]
    expected = np.concatenate([bottom, np.stack([np.diag(p) for p in pairs], 1)], axis=1)
    assert out.shape == (2, 4 + 6)
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_learning_rate_is_the_reference_schedulers_at_each_update():
    """facebookresearch/dlrm c378da26 (mlcommons/training v0.7's submodule), dlrm_s_pytorch.py:
    `LRPolicyScheduler.get_lr` (lines 111-133) at `_step_count` k for the k-th update (torch's
    scheduler steps at construction, line 812, and after each optimizer.step, lines 1022-1023).
    With base 24, W = 2,750, S = 49,315, N = 27,772 (the full config):
      update 1 (count 1): 24 * (1 - 2749 / 2750) = 24 / 2750   (warmup, line 114)
      count 2,749: 24 * 2749 / 2750; counts 2,750 .. 49,314: the same, frozen (line 127)
      count 49,315: 24 (decay, scale 1); count 49,315 + 13,886: 24 * (13,886 / 27,772)^2 = 6
      count 49,315 + 27,771: max(1e-7, 24 / 27,772^2 = 3.1e-8) = 1e-7 (min_lr, line 121),
      and frozen there after.
    Bites: counting updates from 0 (the first update at rate 0), decaying to 0 without the
    floor, or holding `base` instead of the last warmup rate."""
    w = _workload("full")
    lr = lambda update: float(w.learning_rate(update - 1))  # optax's count = update - 1
    assert lr(1) == pytest.approx(24 / 2750, rel=1e-6)
    assert lr(1375) == pytest.approx(12.0, rel=1e-6)
    held = 24 * 2749 / 2750
    for update in (2749, 2750, 2751, 30000, 49314):
        assert lr(update) == pytest.approx(held, rel=1e-6), update
    assert lr(49315) == pytest.approx(24.0, rel=1e-6)
    assert lr(49315 + 13886) == pytest.approx(6.0, rel=1e-5)
    assert lr(49315 + 27770) == pytest.approx(24 * (2 / 27772) ** 2, rel=1e-4)  # 1.24e-7
    for update in (49315 + 27771, 49315 + 27772, 90000):
        assert lr(update) == pytest.approx(1e-7, rel=1e-6), update
    # The mini (W = S = 150: no hold): update 1 at 4 / 150, update 150 at the base rate 4.
    m = _workload("mini")
    assert float(m.learning_rate(0)) == pytest.approx(4.0 / 150, rel=1e-6)
    assert float(m.learning_rate(149)) == pytest.approx(4.0, rel=1e-6)


def test_mllog_hyperparameters_carry_every_dlrm_key_of_the_full_config():
    assert _workload("full").mllog_hyperparameters() == {
        "global_batch_size": 55296,
        "opt_base_learning_rate": 24.0,
        "sgd_opt_base_learning_rate": 24.0,
        "opt_learning_rate_warmup_steps": 2750,
        "lr_decay_start_steps": 49315,
        "sgd_opt_learning_rate_decay_steps": 27772,
        "sgd_opt_learning_rate_decay_poly_power": 2,
    }


def test_parses_the_shared_criteo_sample(shared_data_dir):
    path = shared_data_dir / "criteo_sample" / "criteo_sample.txt"
    lines = path.read_text().splitlines()
    sizes = full.CRITEO_1TB_TABLE_SIZES
    arrays = criteo.parse_lines(lines[1:], sizes, delimiter=",")
    assert arrays["dense"].shape == (200, 13) and arrays["sparse"].shape == (200, 26)
    assert arrays["label"].sum() == sum(line.startswith("1,") for line in lines[1:])
    # Row 0: "0,,3,260.0,,17668.0,...,05db9164,08d6d899,...": missing -> 0, log1p, hex % rows.
    np.testing.assert_allclose(arrays["dense"][0, :5], np.log1p([0, 3, 260, 0, 17668]), rtol=1e-6)
    assert arrays["sparse"][0, 0] == 0x05DB9164 % sizes[0]
    assert arrays["sparse"][0, 1] == 0x08D6D899 % sizes[1]
    assert (arrays["sparse"] < np.array(sizes)).all() and (arrays["sparse"] >= 0).all()


def _write_tsv_days(directory, rows_per_day: dict[int, int], seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    written = []
    for day in range(24):
        lines = []
        for _ in range(rows_per_day.get(day, 0)):
            dense = ["" if rng.random() < 0.2 else str(rng.integers(-1, 500)) for _ in range(13)]
            sparse = ["" if rng.random() < 0.1 else f"{rng.integers(0, 2**32):08x}"
                      for _ in range(26)]
            lines.append("\t".join([str(rng.integers(0, 2)), *dense, *sparse]) + "\n")
        (directory / f"day_{day}").write_text("".join(lines))
        written.extend(lines)
    return written


def test_tsv_train_batches_start_at_the_step_and_take_the_process_share(tmp_path):
    lines = _write_tsv_days(tmp_path, {0: 40, 1: 30})
    sizes = (7,) * 26
    resumed = criteo.tsv_train_batches(str(tmp_path), sizes, 16, 2, 1, 2)
    expected = criteo.parse_lines(lines[2 * 16 + 8: 2 * 16 + 16], sizes)
    batch = next(resumed)
    for key in ("label", "dense", "sparse"):
        np.testing.assert_array_equal(batch[key], expected[key])
    # 70 rows = 4 whole batches of 16; the 5th step starts the next epoch at row 0.
    wrapped = next(criteo.tsv_train_batches(str(tmp_path), sizes, 16, 4, 0, 1))
    first = criteo.parse_lines(lines[:16], sizes)
    np.testing.assert_array_equal(wrapped["sparse"], first["sparse"])


def test_binary_reader_seeks_to_the_step_and_wraps(tmp_path):
    rows = np.arange(10 * 40, dtype=np.int32).reshape(10, 40)
    path = tmp_path / criteo.BINARY_TRAIN
    rows.tofile(path)
    sizes = (1000,) * 26
    batch = next(criteo.binary_train_batches(path, sizes, 4, 2, 1, 2))  # rows 10, 11 -> 0, 1
    np.testing.assert_array_equal(batch["label"], [0.0, 40.0])
    np.testing.assert_array_equal(batch["sparse"][:, 0], [14, 54])
    np.testing.assert_allclose(batch["dense"][1, 0], np.log1p(41.0))
    evals = list(criteo.binary_eval_batches(path, sizes, 10, 4, 0, 1))
    assert [b["mask"].sum() for b in evals] == [4, 4, 2]


def test_the_full_config_reads_the_binary_blocks_in_a_new_random_order_each_epoch(tmp_path):
    """The reference's --mlperf-bin-shuffle (facebookresearch/dlrm bench/run_and_time.sh;
    dlrm_data_pytorch.py line 418: RandomSampler over data_loader_terabyte.py CriteoBinDataset,
    whose item idx is the idx-th block of batch_size rows): 10 rows in batches of 4 are 3
    blocks (rows 0-3, 4-7, 8-9 completed by rows 0-1); each epoch visits each block once, in
    `block_order(3, epoch, seed)`; a run resumed at step 4 reads what the straight run reads;
    process 1 of 2 reads the second half of each block. Bites: the file read in one fixed order
    (the old reader), a shuffle that repeats the same order every epoch, or one that ignores
    the start step."""
    from workloads.dlrm import input_pipeline

    rows = np.arange(10 * 40, dtype=np.int32).reshape(10, 40)
    rows.tofile(tmp_path / criteo.BINARY_TRAIN)
    sizes = (1000,) * 26
    c = config_lib.load("dlrm", "full", {"data.dir": str(tmp_path), "run.seed": 5,
                                         "data.global_batch_size": 4})
    assert c.data.shuffle_blocks and c.is_mlperf
    straight = input_pipeline.criteo_binary_train(c, 0, 0, 1)
    firsts = [int(next(straight)["label"][0]) // 40 for _ in range(9)]
    orders = [criteo.block_order(3, e, 5) for e in range(3)]
    assert firsts == [4 * int(b) for order in orders for b in order]
    assert len({tuple(o) for o in orders}) > 1  # not one order repeated
    resumed = input_pipeline.criteo_binary_train(c, 4, 0, 1)
    assert [int(next(resumed)["label"][0]) // 40 for _ in range(5)] == firsts[4:]
    half = next(criteo.binary_train_batches(tmp_path / criteo.BINARY_TRAIN, sizes, 4, 0, 1, 2,
                                            shuffle_seed=5))
    start = 4 * int(orders[0][0]) + 2
    np.testing.assert_array_equal(half["label"], [40.0 * (start % 10), 40.0 * ((start + 1) % 10)])
    with c.unlocked():
        c.data.shuffle_blocks = False
    in_order = input_pipeline.criteo_binary_train(c, 0, 0, 1)
    assert [int(next(in_order)["label"][0]) // 40 for _ in range(3)] == [0, 4, 8]


def test_flights_features_are_schedule_only_and_match_the_config():
    data = flights.load()
    used = set(flights.DENSE_FEATURES) | set(flights.CATEGORICAL_FEATURES)
    assert not used & set(flights.LEAKING_COLUMNS)
    assert (len(data.train), len(data.eval)) == (flights.TRAIN_ROWS, flights.EVAL_ROWS)
    assert data.table_sizes == flights.TABLE_SIZES
    assert 0.2 < data.train.label.mean() < 0.27  # ~24% of flights arrive > 15 min late
    assert (data.train.sparse < np.array(flights.TABLE_SIZES)).all()
    assert (data.eval.sparse < np.array(flights.TABLE_SIZES)).all()


def test_flights_ids_keep_values_seen_min_count_times_in_train_and_map_the_rest_to_0():
    """Bites: counting over every row instead of the train rows gave "b" (3 + 1 eval) its own
    id; `>` instead of `>=` MIN_COUNT dropped "c"."""
    n = flights.MIN_COUNT
    values = np.array(["c"] * n + ["a"] * (n + 2) + ["b"] * (n - 1) + ["b", "z"])
    train_rows = np.arange(len(values) - 2)  # the last "b" and the "z" are eval rows
    ids, rows = flights._frequent_ids(values, train_rows)
    assert rows == 3  # id 0 (rare or unseen), "a" -> 1, "c" -> 2 (sorted by value)
    assert ids.tolist() == [2] * n + [1] * (n + 2) + [0] * (n - 1) + [0, 0]
    # On the real data every table's last id is used, and the rare/unseen id 0 is rare.
    data = flights.load()
    assert (data.train.sparse.max(axis=0) == np.array(flights.TABLE_SIZES) - 1).all()
    assert (data.eval.sparse == 0).mean() < 0.01


def test_tfds_and_missing_criteo_data_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="no Criteo 1TB builder"):
        _workload("full", **{"data.source": "tfds"}).check_data()
    with pytest.raises(UsageError, match="terabyte_processed_train.bin"):
        _workload("full", **{"data.dir": str(tmp_path)}).check_data()
    with pytest.raises(UsageError, match="day_0"):
        _workload("full", **{"data.source": "criteo_tsv", "data.dir": str(tmp_path)}).check_data()


def _run(tmp_path, name: str, **overrides) -> dict:
    cfg = config_lib.load("dlrm", name, overrides)
    return train.train_and_evaluate(cfg, tmp_path / "run")


def test_eval_auc_is_sklearns_on_the_unmasked_examples_only():
    """Bites: the harness keeping the padding row (scored highest with label 0, it then counts:
    AUC 0.5) and ranking by 1 - score (AUC 0.25) each failed."""
    w = _workload("smoke")
    score = np.array([0.1, 0.4, 0.35, 0.8, 0.99])
    label = np.array([0.0, 0.0, 1.0, 1.0, 0.0])
    mask = np.array([1.0, 1.0, 1.0, 1.0, 0.0])

    def batches(label):
        return [evaluation.BatchEval(sums={}, examples=mask[:3].sum(),
                                     per_example={"score": score[:3], "label": label[:3]},
                                     mask=mask[:3]),
                evaluation.BatchEval(sums={}, examples=mask[3:].sum(),
                                     per_example={"score": score[3:], "label": label[3:]},
                                     mask=mask[3:])]

    # Positives (0.35, 0.8) vs negatives (0.1, 0.4): 3 of the 4 pairs ranked right.
    assert evaluation.quality(w, batches(label)) == pytest.approx(0.75)
    assert evaluation.quality(w, batches(label)) == pytest.approx(
        roc_auc_score(label[:4], score[:4]))
    assert math.isnan(evaluation.quality(w, batches(np.zeros(5))))


def _hand_auc(workdir, cfg, batches) -> float:
    """AUC of a finished run's checkpoint on `batches`, scored here with the model's apply."""
    from tpubench.loops import checkpoint

    w = registry.create(cfg)
    params, _ = checkpoint.restore_variables(workdir, w)
    scores, labels = [], []
    for b in batches:
        keep = np.asarray(b["mask"]) > 0
        logits = w.model().apply({"params": params}, b["dense"], b["sparse"])
        scores.append(np.asarray(logits)[keep])
        labels.append(np.asarray(b["label"])[keep])
    return roc_auc_score(np.concatenate(labels), np.concatenate(scores))


def test_smoke_one_train_and_eval_step_on_synthetic_data(tmp_path):
    """The reported AUC is the saved model's AUC on the synthetic eval batches, scored here.

    Bites: an eval_step returning 1 - sigmoid(logits) as the score made the two differ."""
    from tpubench.loops import feed as data

    summary = _run(tmp_path, "smoke")
    assert summary["steps"] == 1 and summary["status"] == "aborted"
    cfg = config_lib.load("dlrm", "smoke")
    w = registry.create(cfg)
    batches = data.synthetic_eval_batches(w, math.ceil(w.eval_samples / cfg.eval.batch_size), 1)
    assert summary["final_quality"] == pytest.approx(
        _hand_auc(tmp_path / "run", cfg, batches), abs=1e-6)


def test_smoke_one_train_and_eval_step_through_the_criteo_tsv_reader(tmp_path):
    """The reported AUC is the saved model's AUC on the 32 rows of day_23, parsed and scored
    here. Bites: the eval reader skipping the first row of day_23 changed the AUC."""
    lines = _write_tsv_days(tmp_path, {0: 40, 23: 32})
    summary = _run(tmp_path, "smoke", **{"data.source": "criteo_tsv", "data.dir": str(tmp_path)})
    assert summary["steps"] == 1 and summary["status"] == "aborted"
    cfg = config_lib.load("dlrm", "smoke", {"data.source": "criteo_tsv",
                                            "data.dir": str(tmp_path)})
    rows = criteo.parse_lines(lines[40:], tuple(cfg.model.table_sizes))
    batch = dict(rows, mask=np.ones(32, np.float32))
    assert summary["final_quality"] == pytest.approx(
        _hand_auc(tmp_path / "run", cfg, [batch]), abs=1e-6)


def test_full_config_log_fails_only_the_quality_target(tmp_path):
    smoke = config_lib.load("dlrm", "smoke")
    summary = _run(tmp_path, "full", **{"data.source": "synthetic", "model.dtype": "float32",
                                        "model.table_sizes": smoke.model.table_sizes,
                                        "model.embedding_dim": 8, "model.bottom_mlp": (16, 8),
                                        "model.top_mlp": (16, 1),
                                        "run.embedding_shard_min_rows": 256,
                                        "run.embedding_rows_multiple": 8,
                                        "data.global_batch_size": 32, "eval.batch_size": 32,
                                        "eval.samples": 32, "eval.every_samples": 32,
                                        "eval.sample_points": (),
                                        "run.max_train_samples": 32, "run.steps_per_dispatch": 1})
    result = mllog.check_compliance(summary["mlperf_log"])
    assert not result.valid
    assert result.failed_checks() == [
        "WARNING -  Failed checks for eval_accuracy : v['value'] >= 0.8025 and v['value'] < 1.0",
        "ERROR - FAILED",
    ]


# The latest measured eval at which the mini first reached its target over seeds 0-4 and two
# rounding perturbations (configs/mini.py: 864 or 1,008), plus one eval of slack: another CPU
# rounds differently, so no exact step is asserted.
MINI_REACHED_BY_STEP = 1008 + 144
# The strongest logistic regression on the mini's split (dense + one-hot, liblinear C=0.1).
MINI_LR_BASELINE_AUC = 0.7734


@pytest.mark.slow
# Seed 1 runs with --extended (the default run keeps seed 0: suite budget ~25 min on 2 cores).
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.extended)])
def test_mini_reaches_its_auc_target_by_the_measured_step(tmp_path, seed):
    """The target sits above the strongest logistic regression on the same split
    (baselines/dlrm.py); the run gets a step budget of MINI_REACHED_BY_STEP (no wall-clock
    budget) and must reach the target within it; seed 0 also checks the log with the official
    compliance checker (every check passes but Criteo's AUC target)."""
    cfg = config_lib.load("dlrm", "mini")
    assert cfg.eval.target_value >= MINI_LR_BASELINE_AUC + 0.01
    assert MINI_REACHED_BY_STEP % mini.EVAL_EVERY_STEPS == 0
    summary = _run(tmp_path, "mini",
                   **{"run.seed": seed, "run.max_train_samples": MINI_REACHED_BY_STEP * 512})
    assert summary["status"] == "success", summary["quality_history"]
    assert summary["final_quality"] >= cfg.eval.target_value
    assert summary["steps"] <= MINI_REACHED_BY_STEP, summary["steps"]
    if seed == 0:  # the MLPerf checker holds the log to Criteo's AUC target, 0.8025
        assert mllog.check_compliance(summary["mlperf_log"]).failed_checks() == [
            "WARNING -  Failed checks for eval_accuracy : v['value'] >= 0.8025 and "
            "v['value'] < 1.0",
            "ERROR - FAILED",
        ]
        written = json.loads((tmp_path / "run" / "summary.json").read_text())
        assert written["status"] == "success"


_SHARDED_RUN = """
import json, sys
import jax
import numpy as np
from tpubench import config as config_lib, mesh as mesh_lib, registry
from tpubench.loops import engine
data_dir, steps, mesh = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
cfg = config_lib.load("dlrm", "smoke", {
    "data.source": "criteo_tsv", "data.dir": data_dir, "optimizer.learning_rate": 0.5,
    "schedule.warmup_steps": 0, "schedule.decay_start_step": 1000, **mesh})
w = registry.create(cfg)
eng = engine.JitEngine(w, mesh_lib.build_mesh(cfg))
specs = {k: str(v.spec) for k, v in eng.state_shardings.params.items() if k.startswith("emb")}
train = eng.compile(1, synthetic=False).train
state = eng.init_state(cfg.run.seed)
tables = lambda s: {k: np.asarray(jax.device_get(s.params[k])).tolist()
                    for k in ("embedding_0", "embedding_1")}
initial, losses, batches = tables(state), [], w.train_batches(0, 0, 1)
for _ in range(steps):
    block = {k: v[None] for k, v in next(batches).items()}
    state, metrics = train(state, eng.put(block, stacked=True))
    losses.append(float(metrics["last_loss"]))
print(json.dumps({"devices": jax.device_count(), "specs": specs, "losses": losses,
                  "initial": initial, "final": tables(state)}))
"""


def _sharded_run(repo_root, data_dir, devices: int, mesh: dict, steps: int = 8) -> dict:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", _SHARDED_RUN, str(data_dir), str(steps), json.dumps(mesh)],
        cwd=repo_root, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_row_sharded_tables_train_on_8_devices_like_on_one(tmp_path, repo_root):
    """8 steps at a constant learning rate of 0.5 on 96 Criteo-format rows (3 batches of 32, so
    the loss falls as the rows repeat): the per-step losses and the trained values of a
    row-sharded table (embedding_0, 1,000 rows over data x fsdp = 8) and a replicated one
    (embedding_1, 3 rows) agree between a 4x2 mesh of 8 devices and 1 device.

    Bites: `stop_gradient` on the embedding lookup (model.py) left both tables exactly at their
    initial values, failing the "moved" control (the old one-step test, at learning rate 0,
    could not tell)."""
    _write_tsv_days(tmp_path, {0: 96, 23: 32})
    many = _sharded_run(repo_root, tmp_path, 8, {"run.mesh.data": 4, "run.mesh.fsdp": 2})
    one = _sharded_run(repo_root, tmp_path, 1, {})
    assert (many["devices"], one["devices"]) == (8, 1)
    assert many["specs"]["embedding_0"] == "P(('data', 'fsdp'), None)"  # 1000 rows: sharded
    assert many["specs"]["embedding_1"] == "P(None, None)"  # 3 rows: replicated
    assert one["specs"]["embedding_0"] == "P(('data', 'fsdp'), None)"  # the same rule, 1 shard
    np.testing.assert_allclose(many["losses"], one["losses"], rtol=1e-5)
    # Training happened: the loss fell over the 8 steps and both tables moved from their init.
    assert one["losses"][-1] < one["losses"][0] - 0.05, one["losses"]
    for name in ("embedding_0", "embedding_1"):
        np.testing.assert_allclose(many["initial"][name], one["initial"][name], rtol=0, atol=0)
        moved = np.abs(np.subtract(one["final"][name], one["initial"][name])).max()
        assert moved > 1e-3, (name, moved)
        np.testing.assert_allclose(many["final"][name], one["final"][name], rtol=1e-5, atol=1e-6)
