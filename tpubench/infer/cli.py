"""`tpubench infer`: serve a workload's model under the MLPerf LoadGen.

    tpubench infer resnet --config=mini --scenario=Offline [--workdir=DIR] \\
        [--mode=performance|accuracy] [--params=CHECKPOINT_WORKDIR] [--profile=quick|v0.7] \\
        [--server-search[=TRIES]] [--expected-qps=QPS] [--batch-sizes=1,2,4,...] \\
        [--max-batch=N] [--max-wait-ms=MS] [--multistream-samples=8] [--quantize=none|int8] \\
        [--calibration_samples=N] [--calibration=max|percentile:P] [--config.KEY=VALUE ...]

Writes LoadGen's logs and `summary.json` into DIR (default: the next free
RESULTS_ROOT/infer/<platform>/WORKLOAD/CONFIG/<Scenario>_<mode>/run_<i>, as `tpubench run` picks
its run directory) and prints the summary's headline, which
starts with what the result is: "MLPerf Inference v0.7 resnet50" only for the v0.7 profile on the
benchmark's own model and data, "NOT AN MLPERF RESULT (reasons)" otherwise. Exit status: 0 VALID,
1 INVALID (the summary says why, in LoadGen's words), 2 bad usage (one paragraph on stderr,
nothing written).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import pathlib
import sys
from typing import Any

from tpubench.errors import UsageError
from tpubench.infer import labels
from tpubench.infer.settings import PROFILES, Mode, Scenario

USAGE = ("Usage: tpubench infer WORKLOAD --config=CONFIG --scenario=Offline|Server|SingleStream|"
         "MultiStream [--workdir=DIR] [--mode=performance|accuracy] [--params=TRAINING_WORKDIR] "
         "[--profile=quick|v0.7] (see `tpubench infer --help` and docs/inference.md).")


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are `UsageError`s (one paragraph, exit 2, via `main`)."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message[0].upper()}{message[1:]}. {USAGE}")


def _parser() -> argparse.ArgumentParser:
    from tpubench import helptext

    p = _Parser(prog="tpubench infer", formatter_class=helptext.Formatter,
                description=helptext.paragraph(
                    "Serve WORKLOAD's model under the MLPerf LoadGen in one scenario; write "
                    "LoadGen's logs and summary.json, print the result's headline. Exit status 0 "
                    "VALID, 1 INVALID (the summary says why), 2 bad input. Extra "
                    "--config.KEY=VALUE flags override config keys, as for `tpubench run`."),
                epilog=helptext.epilog(
                    "tpubench infer resnet --config=mini --scenario=Offline",
                    "tpubench infer resnet --config=mini --scenario=Server --server-search",
                    "tpubench infer bert --config=mini --scenario=SingleStream --mode=accuracy "
                    "--params=results/mini/1xcpu/bert/mini/run_0", served_only=True))
    p.add_argument("workload", help="a served workload (listed below)")
    p.add_argument("--config", required=True, help="config name (mini, full) or file path")
    p.add_argument("--scenario", required=True,
                   help="Offline | Server | SingleStream | MultiStream")
    p.add_argument("--mode", default="performance", help="performance | accuracy")
    p.add_argument("--workdir", default=None,
                   help="where LoadGen logs and summary.json go (default: the next free "
                   "RESULTS_ROOT/infer/<platform>/WORKLOAD/CONFIG/<Scenario>_<mode>/run_<i>)")
    p.add_argument("--results_root", "--results-root", default="results", dest="results_root",
                   help="where default infer directories go")
    p.add_argument("--params", default=None,
                   help="workdir of a training run: serve its checkpoint (random init otherwise)")
    p.add_argument("--profile", default="quick", help="quick | v0.7")
    p.add_argument("--server-search", nargs="?", type=int, const=6, default=0, metavar="TRIES",
                   help="Server: find the highest VALID target QPS in TRIES runs (default 6)")
    p.add_argument("--expected-qps", type=float, default=0.0,
                   help="Offline expected QPS / Server target QPS (default: from warm-up timing)")
    p.add_argument("--batch-sizes", default=None,
                   help="batch buckets compiled before the run (default: the spec's, else "
                   "1,2,4,8,16,32,64)")
    p.add_argument("--max-batch", type=int, default=0, help="SUT batch cap (default: auto)")
    p.add_argument("--max-wait-ms", type=float, default=None,
                   help="Server: longest wait for a batch to fill (default: from the bound)")
    p.add_argument("--multistream-samples", type=int, default=8,
                   help="MultiStream samples per query")
    p.add_argument("--quantize", default="none",
                   help="none | int8 (post-training int8 weights per output channel; "
                   "tpubench/infer/quantize.py)")
    p.add_argument("--calibration_samples", "--calibration-samples", type=int, default=0,
                   dest="calibration_samples",
                   help="with --quantize=int8: also round the inputs of quantized kernels to "
                   "int8, per tensor, scales from this many training samples (0: float)")
    p.add_argument("--calibration", default="max",
                   help="max | percentile:P (the |activation| statistic a scale comes from)")
    return p


class _MissingMetadataFilter(logging.Filter):
    """Drops orbax's "Metadata file does not exist: .../state/_CHECKPOINT_METADATA" warning:
    reading an item's tree metadata looks for a step-level file that a checkpoint item has no
    need of, and the restore works (issue 33: noise a user cannot act on)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Metadata file does not exist")


@contextlib.contextmanager
def _without_orbax_metadata_warning():
    """While restoring `--params`: orbax logs through absl's logger ("absl")."""
    quiet = _MissingMetadataFilter()
    logger = logging.getLogger("absl")
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _variables(workload: Any, params_dir: str | None) -> tuple[Any, Any, str]:
    """(params, model_state, where they came from): a checkpoint, or random init."""
    import flax.linen as nn
    import jax

    if params_dir:
        try:
            from tpubench.loops.checkpoint import restore_variables
        except ImportError as e:
            raise UsageError("--params needs tpubench.loops.checkpoint.restore_variables: "
                             f"{e}") from e
        try:
            with _without_orbax_metadata_warning():
                params, model_state = restore_variables(params_dir, workload)
        except FileNotFoundError as e:
            raise UsageError(str(e)) from e
        except Exception as e:  # orbax: a checkpoint of another model or config
            raise UsageError(
                f"The checkpoint in --params={params_dir} does not fit the "
                f"{workload.name!r} workload with this --config ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:200]}). Pass the workdir of a training run of the "
                "same workload and config."
            ) from e
        return nn.unbox(params), nn.unbox(model_state), f"checkpoint:{params_dir}"
    seed = int(workload.config.run.get("seed", 0))
    params, model_state = jax.jit(workload.init)(jax.random.key(seed))
    return nn.unbox(params), nn.unbox(model_state), f"random_init:seed={seed}"


def run(args: argparse.Namespace, overrides: list[str]) -> dict[str, Any]:
    """Build the workload, its spec and the engine, then run the scenario or the search."""
    from tpubench import config as config_lib
    from tpubench import registry
    from tpubench.infer.runner import DEFAULT_BATCH_SIZES, Engine, server_search
    from tpubench.infer.spec import inference_spec, with_synthetic_samples

    check_args(args)
    cfg = config_lib.load(args.workload, args.config, overrides)
    with cfg.unlocked():
        cfg.workload = cfg.workload or args.workload
    if args.workdir is None:  # `tpubench run`'s rule: the next free run_<i> under the root
        args.workdir = str(default_workdir(args, cfg))
        print(f"tpubench: infer directory (no --workdir given): {args.workdir}", file=sys.stderr)
    from tpubench.platform import compile_cache

    compile_cache.enable(cfg)  # before the first compile (--config.run.compile_cache=false: off)
    workload = registry.create(cfg)
    spec = inference_spec(workload)
    if cfg.data.get("source") == "synthetic":  # throughput without the dataset
        spec = with_synthetic_samples(spec, args.mode)
    if spec.scenarios and args.scenario.value not in spec.scenarios:
        raise UsageError(f"{spec.mlperf_name} has no {args.scenario.value} scenario in MLPerf "
                         f"Inference v0.7; pass --scenario={'|'.join(spec.scenarios)}.")
    params, model_state, source = _variables(workload, args.params)
    quantization = None
    if args.quantize == "int8":
        from tpubench.infer import quantize

        float_params = params
        scales = _calibration_scales(args, spec, float_params, model_state)
        spec, params = quantize.quantized_spec(spec, float_params, scales)
        quantization = quantize.stats(float_params, params)
        if scales:
            quantization["scheme"] = ("int8 weights, symmetric per output channel; int8 "
                                      "activations into quantized kernels, symmetric per tensor")
            quantization["activations"] = {
                "calibration_samples": int(args.calibration_samples),
                "calibration": args.calibration, "tensors_calibrated": len(scales),
                "max_scale_statistic": max(scales.values()),
                "min_scale_statistic": min(scales.values())}
    if args.batch_sizes:
        batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b]
    else:
        batch_sizes = list(spec.batch_sizes or DEFAULT_BATCH_SIZES)
    info = {"workload": args.workload, "config": cfg.get("config_name", args.config),
            "params": source, "quantize": args.quantize}
    if cfg.data.get("source") == "synthetic":
        info["samples"] = "synthetic"
    if quantization:
        info["quantization"] = quantization
    engine = Engine.prepare(spec, params, model_state, batch_sizes, info)
    settings = engine.default_settings(
        args.scenario, Mode(args.mode), args.profile, args.expected_qps, args.multistream_samples
    )
    if args.server_search:
        return server_search(engine, settings, args.workdir, tries=args.server_search)
    return engine.run(settings, args.workdir, args.max_batch or None, args.max_wait_ms)


def default_workdir(args: argparse.Namespace, cfg: Any) -> pathlib.Path:
    """The next unused RESULTS_ROOT/infer/<platform>/WORKLOAD/CONFIG/<Scenario>_<mode>/run_<i>:
    beside the training runs' tree (`tpubench.mlperf.results.default_workdir`), never inside
    it, so that `tpubench report` does not take a LoadGen summary for a training run."""
    import jax

    from tpubench.platform import chips

    platform = chips.platform_name(jax.devices()).replace(" ", "_")
    base = (pathlib.Path(args.results_root) / "infer" / platform / args.workload
            / (cfg.get("config_name") or "custom") / f"{args.scenario.value}_{args.mode}")
    i = 0
    while (base / f"run_{i}").exists():
        i += 1
    return base / f"run_{i}"


def _calibration_scales(args: argparse.Namespace, spec: Any, params: Any,
                        model_state: Any) -> dict[str, float] | None:
    """The activation statistics of `--calibration_samples` training samples (None: 0)."""
    from tpubench.infer import quantize

    count = int(getattr(args, "calibration_samples", 0))
    if not count:
        return None
    if spec.calibration_inputs is None:
        raise UsageError(f"{spec.mlperf_name} has no calibration set (its InferenceSpec sets no "
                         "calibration_inputs); drop --calibration_samples.")
    percentile = quantize.check_calibration(args.calibration, count)
    inputs = spec.calibration_inputs(count)
    return quantize.calibrate(spec.apply, params, model_state, inputs, min(count, 64),
                              percentile)


def check_args(args: argparse.Namespace) -> None:
    """Every check that needs no model: `UsageError` (one paragraph) on bad input. Parses
    `args.scenario` and `args.mode` into their enums."""
    from tpubench import registry

    registry.mlperf_name(args.workload)  # an unknown workload is named as such (no import)
    args.scenario = Scenario.parse(args.scenario) if isinstance(args.scenario, str) else (
        args.scenario)
    from tpubench.infer.quantize import check_scheme

    check_scheme(getattr(args, "quantize", "none"))
    samples = int(getattr(args, "calibration_samples", 0))
    if samples and getattr(args, "quantize", "none") != "int8":
        raise UsageError("--calibration_samples applies to --quantize=int8 only.")
    from tpubench.infer.quantize import check_calibration

    check_calibration(getattr(args, "calibration", "max"), samples)
    modes = [m.value for m in Mode]
    if args.mode not in modes:
        raise UsageError(f"Unknown --mode={args.mode!r}. Modes: {', '.join(modes)}.")
    if args.profile not in PROFILES:
        raise UsageError(f"Unknown --profile={args.profile!r}. Profiles: "
                         f"{', '.join(sorted(PROFILES))} (quick: seconds, not an MLPerf result; "
                         "v0.7: the MLPerf Inference v0.7 durations, query counts and seeds).")
    try:
        batch_sizes = [int(b) for b in (args.batch_sizes or "1").split(",") if b]
    except ValueError as e:
        raise UsageError(f"--batch-sizes must be integers separated by commas, e.g. "
                         f"--batch-sizes=1,8,32 ({e}).") from e
    if not batch_sizes or min(batch_sizes) < 1:
        raise UsageError("--batch-sizes needs at least one size >= 1, e.g. --batch-sizes=1,8,32.")
    if args.server_search and args.scenario is not Scenario.SERVER:
        raise UsageError("--server-search applies to --scenario=Server only.")
    if args.server_search < 0:
        raise UsageError("--server-search=TRIES needs TRIES >= 1.")
    for name in ("expected_qps", "max_batch", "max_wait_ms"):
        value = getattr(args, name)
        if value is not None and value < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 0, not {value}.")
    if args.multistream_samples < 1:
        raise UsageError("--multistream-samples must be >= 1.")
    given = args.workdir is not None  # else a new run_<i> under --results_root (`run`)
    flag = "--workdir" if given else "--results_root"
    workdir = pathlib.Path(args.workdir if given else args.results_root)
    if workdir.exists() and not workdir.is_dir():
        raise UsageError(f"{flag}={workdir} is a file; pass a directory (it is created).")
    if given and (workdir / "summary.json").exists():
        raise UsageError(f"{workdir / 'summary.json'} exists; results are never overwritten. "
                         "Pass a new --workdir.")
    if args.params is not None and not pathlib.Path(args.params).is_dir():
        raise UsageError(f"--params={args.params} is not a directory: pass the --workdir of a "
                         "finished training run (it holds the checkpoint).")


def headline(summary: dict[str, Any]) -> str:
    """One line: what the result is (its label), scenario, mode, validity, the metric,
    latency, and LoadGen's reasons."""
    validity = summary["validity"]
    if not summary.get("mlperf_result"):
        validity = f"LoadGen {validity} (settings met; still {labels.NOT_MLPERF})"
    label = summary.get("label") or labels.result_label(summary)
    parts = [f"{label} | {summary.get('scenario')} {summary.get('mode', '')}: {validity}"]
    if summary.get("quantize", "none") != "none":
        parts.append(f"quantize={summary['quantize']}")
    for key in ("samples_per_s", "scheduled_samples_per_s", "search_best_qps",
                "p50_latency_ms", "p90_latency_ms", "p99_latency_ms",
                "accuracy", "reference_accuracy", "accuracy_target"):
        value = summary.get(key)
        if value is not None:
            parts.append(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}")
    for reason in summary.get("invalid_reasons", []):
        parts.append(f"reason: {reason}")
    return "; ".join(parts)


def main(argv: list[str]) -> int:
    """Entry point of `tpubench infer` (argv = the arguments after `infer`)."""
    from tpubench import config as config_lib

    overrides, rest = config_lib.split_overrides(argv)
    try:
        args = _parser().parse_args(rest)
        summary = run(args, overrides)
    except UsageError as e:
        print(f"tpubench: error: {e}", file=sys.stderr)
        return 2
    print(headline(summary))
    tag = "" if summary.get("mlperf_result") else f" ({labels.NOT_MLPERF})"
    for attempt in summary.get("search", []):
        print(f"  search{tag} " + json.dumps(attempt))
    print(f"summary: {args.workdir}/summary.json")
    return 0 if summary["validity"] == "VALID" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
