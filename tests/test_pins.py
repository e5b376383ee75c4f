"""Figures pinned to the rules and the vendors (issue 38, "The suite misses wrong figures").

Each test asserts the value a rule, a reference implementation or a vendor gives (cited beside
it), so that a one-line change of the guarded code fails it. The tenth behaviour of the issue's
list, the batch's sharding over every batch axis, needs 8 simulated devices and is tested beside
the other sharding checks (tests/test_sharding.py, one subprocess for all of them).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import os
import pathlib
import shutil
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sacrebleu
from conftest import REPO, missing

from tpubench import config as config_lib
from tpubench import division, registry
from tpubench.loops import steps
from tpubench.loops.cadence import Cadence
from tpubench.loops.clock import Clock, Stopwatch


# ---- 1. a stopwatch read waits for the device ---------------------------------------------------
@jax.jit
def _slow(x):
    """~0.1-1 s of matmuls on one CPU core: long enough that a dispatch returns well before."""
    return jax.lax.fori_loop(0, 40, lambda i, a: jnp.tanh(a @ a) * 0.5, x)


def test_a_stopwatch_or_clock_read_waits_for_the_timed_work():
    """tpubench/loops/clock.py: "no clock read can precede the device sync". JAX dispatches
    asynchronously, so `train_s`, examples/s and MFU would time the dispatch alone if a read did
    not block on the arrays it is given. Bites: removing `jax.block_until_ready(ready)` from
    Stopwatch.stop, Clock.read or Clock.read_unix (the result is then not ready when the read
    returns, and the stopwatch reads the dispatch time)."""
    x = jnp.full((512, 512), 0.01, jnp.float32)
    _slow(x).block_until_ready()  # compiled and warm
    t0 = time.perf_counter()
    _slow(x).block_until_ready()
    compute_s = time.perf_counter() - t0

    sw = Stopwatch()
    y = _slow(x)
    assert not y.is_ready()  # the premise: the dispatch returned before the work was done
    timed = sw.stop(y)
    assert y.is_ready() and timed >= 0.5 * compute_s

    clock = Clock(time.time())
    for read in (clock.read, clock.read_unix):
        y = _slow(x)
        assert not y.is_ready()
        read(y)
        assert y.is_ready(), read.__name__


# ---- 2. the number of evals when the budget is not a multiple of the eval interval -------------
# (workload, eval steps, first eval step, last eval step), computed by hand from the full
# configs: eval j at ceil(j * every / batch), j = 1 .. ceil(budget / every) (the last interval,
# partial, is evaluated at its full sample point).
#   maskrcnn: every 117,266 (1 epoch), batch 16, budget 90,000 x 16 = 1,440,000 = 12.28 epochs
#     -> 13 evals, the last at ceil(13 x 117,266 / 16) = ceil(95,278.6) = 95,279. (The reference,
#     mlcommons/training object_detection/pytorch/tools/train_mlperf.py mlperf_test_early_exit,
#     evaluates at whole epochs only, `(iteration + 1) % iters_per_epoch == 0`, and stops at
#     SOLVER.MAX_ITER = 90,000: its last eval is the 12th; tpubench's budget rule trains on to
#     the 13th epoch's end rather than leave 2,050 iterations unevaluated.)
#   (dlrm lists its sample points, as the reference evaluates: its own test below.)
#   rnnt: every epoch of 281,241, batch 64, budget 100,000 x 64 = 6,400,000 = 22.76 epochs ->
#     23 evals, the last at ceil(23 x 281,241 / 64) = ceil(101,070.98) = 101,071.
#   deeplab: every epoch of 20,210, batch 4, budget 200,000 x 4 = 800,000 = 39.58 epochs -> 40
#     evals, the last at 40 x 20,210 / 4 = 202,100.
#   (rnnt and deeplab have no v0.7 training reference: MLPerf v0.7 serves them only.)
PARTIAL_BUDGETS = [
    ("maskrcnn", 13, 7_330, 95_279),
    ("rnnt", 23, 4_395, 101_071),
    ("deeplab", 40, 5_053, 202_100),
]


@pytest.mark.parametrize(("workload", "count", "first", "last"), PARTIAL_BUDGETS)
def test_a_budget_that_is_not_a_whole_number_of_intervals_ends_with_one_more_eval(
        workload, count, first, last):
    """Bites: n_evals = (budget - offset) // every (the last partial interval is never
    evaluated: 12, 19, 22, 39 evals), or a fixed step interval ceil(every / batch) (drifts)."""
    c = config_lib.load(workload, "full")
    cad = Cadence.from_config(c, c.data.train_samples)
    assert (len(cad.eval_steps), cad.eval_steps[0], cad.max_steps) == (count, first, last)
    gbs, every = c.data.global_batch_size, c.eval.every_samples or c.data.train_samples
    assert last * gbs >= c.run.max_train_samples  # the budget is covered by the last eval
    assert (cad.eval_steps[-2] - 1) * gbs < c.run.max_train_samples  # and only just
    for j, s in enumerate(cad.eval_steps, start=1):  # each eval at its own sample point
        assert s == math.ceil(j * every / gbs)


def test_dlrm_evaluates_where_the_reference_does_every_test_freq_batches_and_at_the_epoch_end():
    """facebookresearch/dlrm c378da26 (mlcommons/training v0.7's submodule): bench/run_and_time.sh
    runs --mini-batch-size=2048 --test-freq=102400, and dlrm_s_pytorch.py lines 1036-1040 test
    when `(j + 1) % args.test_freq == 0 or (j + 1 == nbatches)`: after every 209,715,200
    samples (20 times in the 4,195,197,692-sample epoch) and at the epoch's end, 21 evals. At
    batch 55,296: eval j at ceil(j x 209,715,200 / 55,296), 3,793 ... 75,852, then 75,869.
    Bites: the former 0.05-epoch interval (209,759,885 samples: sparser than the reference,
    which the rules' "at least as frequently" forbids; 20 evals), or no eval at the epoch end."""
    c = config_lib.load("dlrm", "full")
    cad = Cadence.from_config(c, c.data.train_samples)
    every, gbs = 102_400 * 2_048, 55_296
    assert len(cad.eval_steps) == 21
    assert list(cad.eval_steps[:20]) == [math.ceil(j * every / gbs) for j in range(1, 21)]
    assert (cad.eval_steps[0], cad.eval_steps[19], cad.eval_steps[-1]) == (3_793, 75_852, 75_869)
    assert cad.max_steps == 75_869 == math.ceil(4_195_197_692 / gbs)


# ---- 3. the absolute epoch_num of each eval in a real run's log ---------------------------------
def test_a_real_runs_log_numbers_each_eval_and_block_by_the_epochs_trained(tmp_path):
    """MLPerf Training rules v0.7, "Epoch numbering" (and the 0.7.0 checker's eval_accuracy
    `epoch_num` metadata): an eval after s samples is logged at epoch_num = s / train_samples,
    a block that starts after s samples at first_epoch_num = 1 + s / train_samples (epochs count
    from 1). A smoke ResNet of 12 training samples, batch 8, evals every 16 samples (2 steps),
    budget 48: evals after 16, 32, 48 samples -> epoch_num 1.3333, 2.6667, 4; blocks start after
    0, 16, 32 -> first_epoch_num 1, 2.3333, 3.6667, each 1.3333 epochs long.
    Bites: epoch_num of the samples before the eval's block (step - 1) or 1-based
    (1 + s / train_samples), or a block's first epoch counted from 0."""
    from tpubench.loops import supervised as train

    cfg = config_lib.load("resnet", "smoke", {
        "data.train_samples": 12, "eval.every_samples": 16, "run.max_train_samples": 48,
        "eval.target_value": 1.1})
    summary = train.train_and_evaluate(cfg, tmp_path / "run")
    assert summary["steps"] == 6
    records = [json.loads(line.split(":::MLLOG ", 1)[1])
               for line in (tmp_path / "run" / "mlperf_log.txt").read_text().splitlines()
               if ":::MLLOG" in line]
    evals = [r["metadata"]["epoch_num"] for r in records if r["key"] == "eval_accuracy"]
    assert evals == [1.3333, 2.6667, 4]
    blocks = [(r["metadata"]["first_epoch_num"], r["metadata"]["epoch_count"])
              for r in records if r["key"] == "block_start"]
    assert blocks == [(1, 1.3333), (2.3333, 1.3333), (3.6667, 1.3333)]


# ---- 4. the peak FLOP/s of every chip -----------------------------------------------------------
T, G, GiB = 1e12, 1e9, 2**30
# key: (bf16 FLOP/s, TF32 FLOP/s, FP32 FLOP/s, HBM bytes, HBM bytes/s, JAX devices per chip),
# each per chip, dense, as the vendor prints it:
PINNED_CHIPS = {
    # Google's Cloud TPU v2 launch figures: 180 TFLOPS per 4-chip Cloud TPU (v2-8), 11.5 PFLOPS
    # per 256-chip Pod -> 45 per chip; 16 GiB HBM and 700 GB/s per chip (2 TensorCores).
    "v2": (45 * T, 0, 0, 16 * GiB, 700 * G, 2),
    # cloud.google.com/tpu/docs/v3: "Peak compute per chip 123 teraflops (bf16)", "HBM2
    # capacity and bandwidth 32 GiB, 900 GBps"; "Each v3 TPU chip contains two TensorCores".
    "v3": (123 * T, 0, 0, 32 * GiB, 900 * G, 2),
    # cloud.google.com/tpu/docs/v4: "275 teraflops (bf16 or int8)", "32 GiB, 1200 GBps".
    "v4": (275 * T, 0, 0, 32 * GiB, 1200 * G, 1),
    # cloud.google.com/tpu/docs/v5e: "Peak compute per chip (bf16) 197 TFLOPs", "HBM2 capacity
    # and bandwidth 16 GB, 819 GBps" (int8: 393 TOPs, not used by MFU).
    "v5e": (197 * T, 0, 0, 16 * GiB, 819 * G, 1),
    # cloud.google.com/tpu/docs/v5p: "Peak compute per chip (bf16) 459 TFLOPs", "HBM2e
    # capacity and bandwidth 95 GB, 2765 GBps".
    "v5p": (459 * T, 0, 0, 95 * GiB, 2765 * G, 1),
    # cloud.google.com/tpu/docs/v6e: "Peak compute per chip (bf16) 918 TFLOPs", "HBM capacity
    # per chip 32 GB", "HBM bandwidth per chip 1640 GBps".
    "v6e": (918 * T, 0, 0, 32 * GiB, 1640 * G, 1),
    # NVIDIA A100 datasheet (80GB SXM): FP32 19.5 TFLOPS; TF32 Tensor Core 156 (312 with
    # sparsity); BF16 Tensor Core 312 (624 with sparsity); 80 GB HBM2e, 2,039 GB/s.
    "a100": (312 * T, 156 * T, 19.5 * T, 80 * GiB, 2039 * G, 1),
    # NVIDIA H100 datasheet (SXM): FP32 67 TFLOPS; TF32 Tensor Core 989 with sparsity -> 494.5;
    # BF16 Tensor Core 1,979 with sparsity -> 989.5; 80 GB, 3.35 TB/s.
    "h100": (989.5 * T, 494.5 * T, 67 * T, 80 * GiB, 3350 * G, 1),
    # NVIDIA H200 datasheet (SXM): the H100's compute; 141 GB HBM3e, 4.8 TB/s.
    "h200": (989.5 * T, 494.5 * T, 67 * T, 141 * GiB, 4800 * G, 1),
}


def test_every_chip_is_pinned_to_its_vendors_figures():
    """The whole table (tpubench/platform/chips.py CHIPS), not a sample: a chip added without a
    pinned figure, or any figure changed, fails. Bites: e.g. v5e at 196 TFLOP/s, an H100 at the
    sparse 1,979, v3 with one device per chip."""
    from tpubench.platform.chips import CHIPS

    assert set(CHIPS) == set(PINNED_CHIPS)
    for key, chip in CHIPS.items():
        got = (chip.peak_bf16_flops, chip.peak_tf32_flops, chip.peak_fp32_flops, chip.hbm_bytes,
               chip.hbm_bytes_per_s, chip.devices_per_chip)
        assert got == pytest.approx(PINNED_CHIPS[key], rel=1e-12), key


# ---- 5. LoadGen settings of the v0.7 profile ----------------------------------------------------
# The rules' figures (MLPerf Inference v0.7 mlperf.conf, quoted with its line numbers in
# mlcommons/inference r0.7 mlperf.conf), per scenario: (target percentile, min_duration ms,
# min_query_count).
V07_RULES = {
    "SingleStream": (0.90, 60_000, 1_024),  # lines 23-25
    "MultiStream": (0.99, 60_000, 270_336),  # lines 28, 31, 32
    "Server": (0.99, 60_000, 270_336),  # lines 41, 43, 44
    "Offline": (None, 60_000, 24_576),  # lines 55, 59 (Offline: the minimum sample count)
}
V07_SEEDS = (12786827339337101903, 12640797754436136668, 3135815929913719677)  # lines 19-21


def _mlperf_conf() -> dict[tuple[str, str, str], str]:
    """The official v0.7 mlperf.conf in ../shared (skip, or fail in CI, when absent)."""
    shared = pathlib.Path(os.environ.get("TPUBENCH_SHARED_DIR", REPO.parent / "shared"))
    path = shared / "mlperf_inference_v07" / "mlperf.conf"
    if not path.is_file():
        missing(f"{path} is missing (the MLPerf Inference v0.7 mlperf.conf; set "
                "TPUBENCH_SHARED_DIR)")
    conf = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            key, value = (s.strip() for s in line.split("=", 1))
            model, scenario, name = key.split(".", 2)
            conf[(model, scenario, name)] = value
    return conf


def _v07(scenario: str, **kw):
    from tpubench.infer.settings import Mode, RunSettings, Scenario

    return RunSettings(Scenario(scenario), Mode.PERFORMANCE, "v0.7", expected_qps=10.0,
                       latency_bound_ms=kw.pop("bound", 15.0), **kw).to_loadgen()


@pytest.mark.parametrize("scenario", list(V07_RULES))
def test_the_v07_profile_sets_each_scenarios_percentile_duration_and_count(scenario):
    """Each figure against the literal rule and against the official file. Bites: SingleStream
    at the 99th percentile (or MultiStream at the 90th), a min_duration other than 60 s in any
    scenario, a query count off the table, other seeds."""
    percentile, duration, count = V07_RULES[scenario]
    ts = _v07(scenario)
    assert ts.min_duration_ms == duration
    assert (ts.qsl_rng_seed, ts.sample_index_rng_seed, ts.schedule_rng_seed) == V07_SEEDS
    field = {"SingleStream": "single_stream", "MultiStream": "multi_stream",
             "Server": "server"}.get(scenario)
    if field:
        assert getattr(ts, f"{field}_target_latency_percentile") == percentile
        assert ts.min_query_count == count
    else:  # Offline: one query of >= 24,576 samples: the expected QPS floored at 24,576 / 60 s
        assert ts.offline_expected_qps == pytest.approx(count / (duration / 1000))
    conf = _mlperf_conf()
    assert int(conf[("*", scenario, "min_duration")]) == duration
    assert int(conf[("*", scenario, "min_query_count")]) == count
    if percentile is not None:
        assert int(conf[("*", scenario, "target_latency_percentile")]) / 100 == percentile
    assert tuple(int(conf[("*", "*", k)]) for k in (
        "qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")) == V07_SEEDS


def test_multistream_latency_and_samples_per_query_reach_loadgen():
    """MultiStream's query size goes to LoadGen as given (v0.7's mlperf.conf line 65 leaves it
    to user.conf: `*.MultiStream.samples_per_query = 4` "should be defined and overridden"); the
    expected latency too, and the Server bound becomes the target latency. Bites: a fixed
    samples_per_query, or the bound not converted to ns."""
    ts = _v07("MultiStream", multistream_samples_per_query=4, expected_latency_ms=3.0)
    assert ts.multi_stream_samples_per_query == 4
    assert ts.multi_stream_expected_latency_ns == 3_000_000
    assert _v07("MultiStream", multistream_samples_per_query=24).multi_stream_samples_per_query \
        == 24
    assert _v07("SingleStream", expected_latency_ms=2.5).single_stream_expected_latency_ns \
        == 2_500_000
    assert _v07("Server", bound=130.0).server_target_latency_ns == 130_000_000
    assert int(_mlperf_conf()[("*", "MultiStream", "samples_per_query")]) == 4


def test_each_benchmarks_latency_bounds_are_the_v07_ones():
    """Server and MultiStream target latencies (ms) of the served benchmarks against mlperf.conf
    lines 30, 34, 40, 45, 46, 50-52 and the literal figures. Bites: any bound changed."""
    from workloads.bert import inference as bert
    from workloads.dlrm import inference as dlrm
    from workloads.resnet.inference import resnet_inference_spec
    from workloads.rnnt.inference import rnnt_inference_spec
    from workloads.ssd.inference import BENCHMARKS

    resnet = resnet_inference_spec(registry.create(config_lib.load("resnet", "smoke")))
    rnnt = rnnt_inference_spec(registry.create(config_lib.load("rnnt", "smoke")))
    server = {"resnet50": resnet.server_latency_bound_ms, "bert": bert.SERVER_LATENCY_BOUND_MS,
              "dlrm": dlrm.SERVER_LATENCY_BOUND_MS, "rnnt": rnnt.server_latency_bound_ms,
              "ssd-resnet34": BENCHMARKS["resnet34"].server_ms}
    multistream = {"resnet50": resnet.multistream_latency_bound_ms,
                   "ssd-resnet34": BENCHMARKS["resnet34"].multistream_ms,
                   "ssd-mobilenet": BENCHMARKS["mobilenet_v1"].multistream_ms}
    assert server == {"resnet50": 15, "bert": 130, "dlrm": 30, "rnnt": 1000, "ssd-resnet34": 100}
    assert multistream == {"resnet50": 50, "ssd-resnet34": 66, "ssd-mobilenet": 50}
    conf = _mlperf_conf()

    def conf_ms(model, scenario):
        return float(conf.get((model, scenario, "target_latency"),
                              conf[("*", scenario, "target_latency")]))

    assert server == {m: conf_ms(m, "Server") for m in server}
    assert multistream == {m: conf_ms(m, "MultiStream") for m in multistream}


# ---- 6. the tokenizer the translation evals pass to sacreBLEU -----------------------------------
# German text where the tokenizations differ: quotes, a price, a percentage, punctuation glued
# to words. Uncased BLEU: intl 30.93, 13a 25.17, none 21.28.
REFS = ["„Das ist gut“, sagte er.", "Der Preis: 1.000,50 $ (inkl. 19% MwSt.)!",
        "Sie kamen am 3. Mai 2014 an.", "Ein Hund läuft über die Wiese."]
HYPS = ["„das ist gut“ sagte er.", "Der Preis: 1.000,50 $ inkl. MwSt!",
        "Sie kamen im Mai 2014.", "Ein Hund rennt auf der Wiese."]


@dataclasses.dataclass
class _Ids:
    """Stands in for the prepared vocabulary: decodes row i of the ids to HYPS[ids[i, 0]]."""

    def decode(self, ids):
        return [HYPS[int(row[0])] for row in ids]


@pytest.mark.parametrize("workload", ["transformer", "gnmt"])
def test_the_translation_eval_scores_with_the_references_tokenizer(workload):
    """The BLEU the full config's eval_finalize reports is sacreBLEU uncased with the
    international tokenization, as the v0.7 references score: Transformer,
    mlcommons/training translation/tensorflow/transformer/compute_bleu.py (`bleu_tokenize`:
    mteval-v14's international tokenization, `bleu_wrapper(..., case_sensitive=False)`); GNMT,
    rnn_translator/pytorch/seq2seq/inference/inference.py (`sacrebleu --score-only -lc
    --tokenize intl`). On this text 13a and none give other scores. Bites: eval_finalize
    passing no tokenizer or "13a", corpus_bleu's lowercase=False, the configs' bleu_tokenize
    set to anything else."""
    from tpubench.evaluation import EvalResults

    w = registry.create(config_lib.load(workload, "full"))
    w._host["tokenizer"] = _Ids()
    w._host["eval"] = ([], REFS)
    order = np.array([2, 0, 3, 1])  # eval order differs from example order
    results = EvalResults(per_example={"example_id": order, "decoded": order[:, None]},
                          sums={}, examples=4)
    got = w.eval_finalize(results)
    want = {t: sacrebleu.corpus_bleu(HYPS, [REFS], lowercase=True, tokenize=t).score / 100
            for t in ("intl", "13a", "none")}
    assert got == pytest.approx(want["intl"], rel=1e-12)
    assert got == pytest.approx(0.3093, abs=1e-4)
    assert abs(want["13a"] - got) > 0.05 and abs(want["none"] - got) > 0.05


# ---- 7. the closed-division allow-list ----------------------------------------------------------
# Every key that closed division lets an override change, per MLPerf config workload: the
# harness table (tpubench/mlperf/tunables.py HARNESS) plus the workload's own rows. A copy on
# purpose: adding a key anywhere fails the test until it is added here with its rule.
# The harness rows come from the v0.7 training rules (mlcommons/training_policies
# training_rules.adoc, June 2020): "Graph Execution" (parallelism, dispatch), "Numerical
# formats" (model.dtype), "Random numbers" (run.seed), "Data State at Start of Run" (data.dir),
# "Training Data Order" (eval.batch_size); the rest change no computed value (budgets,
# checkpoints, compile cache, progress lines, metadata).
HARNESS_KEYS = {
    "run.mesh", "run.dcn_mesh", "run.parallelism", "run.fsdp_min_size", "run.steps_per_dispatch",
    "run.scan_unroll", "run.cpu_max_steps_in_flight", "model.dtype", "run.seed", "data.dir",
    "eval.batch_size", "run.checkpoint_every_evals", "run.checkpoint_keep", "run.compile_cache",
    "run.compile_cache_dir", "run.max_time_s", "run.max_train_samples", "run.profile_steps",
    "run.progress_every_s", "submission.org", "submission.platform", "submission.status",
}
# Each workload's rows: "Hyperparameters" table of training_rules.adoc v0.7 (benchmark |
# optimizer | hyperparameter | constraint), plus data location / representation rows.
WORKLOAD_KEYS = {
    # bert | lamb: global_batch_size, opt_base_learning_rate, opt_epsilon,
    # opt_learning_rate_training_steps, opt_learning_rate_warmup_steps, start_warmup_step,
    # opt_lamb_beta_1, opt_lamb_beta_2, opt_lamb_weight_decay_rate.
    "bert": {"data.global_batch_size", "optimizer.learning_rate", "optimizer.epsilon",
             "schedule.train_steps", "schedule.warmup_steps", "schedule.start_warmup_step",
             "optimizer.beta_1", "optimizer.beta_2", "optimizer.weight_decay"},
    # dlrm | sgd: global_batch_size, opt_base_learning_rate, opt_learning_rate_warmup_steps,
    # lr_decay_start_steps, sgd_opt_learning_rate_decay_steps, decay_poly_power (2); the data
    # format (binary or TSV of the same days), the table layout (graph), infer-only keys.
    "dlrm": {"data.global_batch_size", "optimizer.sparse_embedding_update",
             "optimizer.learning_rate", "schedule.warmup_steps", "schedule.decay_start_step",
             "schedule.decay_steps", "schedule.decay_power", "data.source",
             "run.embedding_shard_min_rows", "run.embedding_rows_multiple",
             "eval.inference_variant", "eval.inference_quantile_file"},
    # gnmt | adam: global_batch_size, opt_base_learning_rate, warmup steps, remain steps, decay
    # interval, decay steps (4), decay factor (0.5), max_sequence_length; the prepared cache.
    "gnmt": {"data.global_batch_size", "optimizer.learning_rate", "schedule.warmup_steps",
             "schedule.remain_steps", "schedule.decay_interval", "schedule.decay_steps",
             "schedule.decay_factor", "data.max_len", "data.cache_dir"},
    # maskrcnn | sgd: global_batch_size, opt_base_learning_rate (0.02 K), decay steps (the
    # (60000, 80000) (1 + K/10) 16 / batch form), decay factor (0.1), warmup steps and factor;
    # where the pretrained backbone and the annotations live.
    "maskrcnn": {"data.global_batch_size", "optimizer.learning_rate", "schedule.decay_steps",
                 "schedule.decay_factor", "schedule.warmup_steps", "schedule.warmup_factor",
                 "model.backbone_checkpoint", "data.annotations_dir"},
    # minigo | sgd: train_batch_size, lr_boundaries, lr_rates, the games per generation (>=
    # 8,192) and their fixed minimum (8,192); where the target model lives.
    "minigo": {"data.global_batch_size", "schedule.lr_boundaries", "schedule.lr_rates",
               "data.games_per_generation", "data.min_games_per_generation",
               "eval.target_file"},
    # resnet | lars/sgd: global_batch_size, model_bn_span, label smoothing, opt_name, base lr,
    # end lr, poly power, warmup epochs, decay steps, momentum, weight decay, lars_epsilon; the
    # convolution implementation (graph) and uint8 pixels (numerical formats).
    "resnet": {"model.conv_impl", "data.uint8_pixels", "data.global_batch_size", "model.bn_span",
               "model.label_smoothing", "optimizer.name", "optimizer.learning_rate",
               "schedule.end_learning_rate", "schedule.decay_power", "schedule.warmup_steps",
               "schedule.train_steps", "optimizer.momentum", "optimizer.weight_decay",
               "optimizer.epsilon"},
    # ssd | sgd: global_batch_size, opt_base_learning_rate, warmup steps and factor, decay
    # boundary epochs, max_samples, model_bn_span; where the backbone lives.
    "ssd": {"data.global_batch_size", "optimizer.learning_rate", "schedule.warmup_steps",
            "schedule.warmup_factor", "schedule.decay_steps", "schedule.decay_boundary_epochs",
            "data.max_samples", "model.bn_span", "model.backbone_checkpoint",
            "optimizer.weight_decay"},  # row `ssd | sgd | opt_weight_decay | arbitrary constant`
    # transformer | adam / lazy: global_batch_size, base lr, warmup steps, beta_1, beta_2,
    # epsilon (1e-9); training-set length cut (Data Representation); vocabulary file and
    # data location.
    "transformer": {"data.global_batch_size", "optimizer.learning_rate",
                    "schedule.warmup_steps", "optimizer.beta_1", "optimizer.beta_2",
                    "optimizer.epsilon", "data.max_len", "data.dir", "data.cache_dir",
                    "data.vocab_file"},
}


@functools.cache
def _mlperf_configs() -> list[tuple[str, str]]:
    return [(w, n) for w in registry.names() for n in config_lib.config_names(w)
            if config_lib.load(w, n).is_mlperf]


def test_the_allow_list_is_exactly_the_pinned_rule_table():
    """Bites: any key added to HARNESS or to a workload's closed_tunables (or removed)."""
    from tpubench.mlperf.tunables import HARNESS

    assert set(HARNESS) == HARNESS_KEYS
    workloads = {w for w, _ in _mlperf_configs()}
    assert workloads == set(WORKLOAD_KEYS)
    for w in workloads:
        assert set(division.WORKLOADS.get(w, {})) == WORKLOAD_KEYS[w], w
    assert set(division.WORKLOADS) == {w for w, keys in WORKLOAD_KEYS.items() if keys}


def _leaves(c, prefix="") -> list[str]:
    out = []
    for k, v in c.items():
        key = f"{prefix}{k}"
        out += _leaves(v, key + ".") if hasattr(v, "items") else [key]
    return out


def _changed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value * 2 + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, tuple):
        return (*value, value[-1]) if value else (1,)
    return None


def test_changing_any_key_of_a_full_config_makes_the_run_open_unless_the_rules_allow_it():
    """Every leaf of every MLPerf config, changed alone: the run stays closed only when the key
    (or the section above it, e.g. run.mesh.data under run.mesh) is in the pinned table and the
    new value keeps every constraint; any other key makes it open with the key named. Bites: a
    key added to an allow-list, or `tunable()` matching by a shorter prefix than a section."""
    for w, name in _mlperf_configs():
        allowed = HARNESS_KEYS | WORKLOAD_KEYS[w]
        shipped = config_lib.load(w, name)
        for key in _leaves(shipped):
            if key in division.DERIVED or key in ("is_mlperf", "submission.division"):
                continue
            c = copy.deepcopy(shipped)
            new = _changed(division.config_value(c, key))
            if new is None:
                continue
            parent, leaf = c, key.rsplit(".", 1)[-1]
            for part in key.split(".")[:-1]:
                parent = parent[part]
            with c.unlocked():
                parent[leaf] = new
            reasons = division.apply(c, [key], mlperf=True)
            in_table = any(key == k or key.startswith(k + ".") for k in allowed)
            if in_table:
                assert not any(r.startswith(f"{key}=") and "changes the benchmark" in r
                               for r in reasons), (w, name, key, reasons)
                assert reasons == division.violations(c), (w, name, key)
            else:
                assert c.submission.division == "open" and c.is_mlperf is False, (w, name, key)
                assert any(r.startswith(f"{key}=") and "changes the benchmark" in r
                           for r in reasons), (w, name, key, reasons)


# ---- 8. the batch's sharding over data x fsdp: tests/test_sharding.py ----------------------------


# ---- 9. the NaN check over a dispatch of K > 1 steps --------------------------------------------
def _loss_from_data(state, batch):
    """A step whose loss is the batch's value and which leaves the state as it is (the params
    stay finite): a NaN at one inner step is then a NaN at that step only."""
    return state.replace(step=state.step + 1), {"loss": jnp.sum(batch["x"])}


@pytest.mark.parametrize("bad_step", [0, 1, 2])
def test_a_nan_at_any_inner_step_of_a_dispatch_stops_the_run(bad_step):
    """The dispatch's `finite` flag is the all() over its K = 4 losses (tpubench/loops/steps.py
    _dispatch_metrics), and the block read raises on it (supervised._read_block_metrics).
    Bites: finite = isfinite(last loss) (a NaN at steps 1-3 of 4 is missed: the last loss is
    finite), or _read_block_metrics testing any() instead of all()."""
    from tpubench.loops.supervised import Diverged, _read_block_metrics

    state = steps.TrainState(step=jnp.zeros([], jnp.int32), params={}, opt_state={},
                             model_state={}, rng=jax.random.PRNGKey(0))
    dispatch = jax.jit(steps.make_dispatch(_loss_from_data))
    x = np.ones((4, 2), np.float32)
    _, good = dispatch(state, {"x": x})
    assert bool(good["finite"]) and float(good["last_loss"]) == 2.0
    x[bad_step, 1] = np.nan
    _, bad = dispatch(state, {"x": x})
    assert float(bad["last_loss"]) == 2.0  # the last step is finite
    assert not bool(bad["finite"])
    assert len(_read_block_metrics([good], 4)) == 1
    with pytest.raises(Diverged, match="NaN/Inf in the block ending at step 8"):
        _read_block_metrics([good, bad], 8)


# ---- 10. a converged run that fails the compliance checker is not scored ------------------------
GOOGLE_RESNET = "mlperf_v07_results/Google/results/tpu-v3-32-TF2.0/resnet"


def _series(shared_data_dir, root: pathlib.Path, broken: int | None) -> list[pathlib.Path]:
    """Five MLPerf-config run dirs holding Google's v0.7 ResNet logs (all converged and
    compliant); the log of run `broken` loses its `submission_benchmark` line (a key the
    0.7.0 checker requires)."""
    logs = sorted((shared_data_dir / GOOGLE_RESNET).glob("result_*.txt"))[:5]
    dirs = []
    for i, log in enumerate(logs):
        d = root / f"run_{i}"
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({
            "workload": "resnet", "config": "full", "is_mlperf": True, "status": "success",
            "platform": "tpu-v3-32"}))
        shutil.copy(log, d / "mlperf_log.txt")
        if i == broken:
            lines = (d / "mlperf_log.txt").read_text().splitlines(keepends=True)
            kept = [s for s in lines if '"key": "submission_benchmark"' not in s]
            assert len(kept) == len(lines) - 1
            (d / "mlperf_log.txt").write_text("".join(kept))
        dirs.append(d)
    return dirs


def test_a_converged_run_that_fails_compliance_is_not_scored(shared_data_dir, tmp_path):
    """MLPerf Training v0.7 (the result summarizer, mlperf_logging result_summarizer.py: a log
    the compliance checker refuses is scored as a run that did not converge). `tpubench report`
    and a series' own score (tpubench/loops/multirun.py score) both check it: the broken run
    (the third fastest) counts as the slowest, so the mean is that of runs 2-4 of the other
    four, not runs 2-4 of all five. Bites: Run.counted ignoring `compliance`, check_runs not
    run by the report, or the series scored without the checker."""
    from tpubench.loops import multirun
    from tpubench.report import cli as report_cli
    from tpubench.report.tree import load_tree

    clean = _series(shared_data_dir, tmp_path / "clean", None)
    (reference,) = load_tree(tmp_path / "clean").results
    by_time = sorted(range(5), key=lambda i: reference.runs[i].minutes)
    middle = by_time[2]
    broken = _series(shared_data_dir, tmp_path / "broken", middle)
    tree = load_tree(tmp_path / "broken")
    report_cli._check([tree], tmp_path / "out")
    (result,) = tree.results
    minutes = sorted(r.minutes for r in reference.runs)
    others = sorted(m for i, m in enumerate(r.minutes for r in reference.runs) if i != middle)
    assert [r.counted for r in result.runs].count(False) == 1
    assert "fails compliance" in result.verdict()
    assert result.minutes == pytest.approx(sum(others[1:]) / 3, rel=1e-12)
    assert result.minutes != pytest.approx(sum(minutes[1:-1]) / 3, rel=1e-9)

    cfg = config_lib.load("resnet", "full")
    assert multirun.score(cfg, clean)["olympic_mean_minutes"] == pytest.approx(
        sum(minutes[1:-1]) / 3, rel=1e-12)
    scored = multirun.score(cfg, broken)
    assert scored["olympic_mean_minutes"] == pytest.approx(result.minutes, rel=1e-12)
    assert "fails compliance" in scored["verdict"]
