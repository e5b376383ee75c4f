"""What a `tpubench infer` result may call itself.

Only a run of the `v0.7` profile, under LoadGen v0.7, on the benchmark's own model and data, with
the reference weights, may carry an MLPerf Inference benchmark name (`resnet50`, `bert-99`)
without a qualifier; today no run does (LoadGen 6 is the engine; the weights are
tpubench-trained or random; issue 35). Every other run is labelled "NOT AN MLPERF RESULT"
with the reasons, in the headline, in `summary.json`, and at the
top of LoadGen's own `mlperf_log_summary.txt` (LoadGen writes "Result is : VALID" for any run
whose settings it met, whatever those settings were).
"""

from __future__ import annotations

import pathlib
from typing import Any

NOT_MLPERF = "NOT AN MLPERF RESULT"
MLPERF_PROFILE = "v0.7"
# The version LoadGen built from mlcommons/inference's v0.7 tag logs (loadgen/version_generator.py
# writes `Version` ".5a1"); LoadGen 6.x (PyPI mlcommons-loadgen) logs "6.0.x". The v0.7 rules
# require the round's LoadGen, and the r0.7 submission checker cannot read LoadGen 6's
# SingleStream and MultiStream summaries ("90.0th percentile", no "Samples per query").
V07_LOADGEN_VERSION = ".5a1"
# MLPerf Mobile's benchmarks, served here on LoadGen too: not MLPerf Inference v0.7 benchmarks.
MOBILE = ("mobilenet-edgetpu", "mobilebert", "ssd-mobilenetv2", "deeplabv3")


def not_mlperf_reasons(profile: str, benchmark_model_and_data: bool, config: str,
                       params_source: str, mlperf_name: str, samples: str = "",
                       loadgen_version: str | None = None) -> list[str]:
    """Why a run is not an MLPerf Inference v0.7 result (empty: it is one). `samples`:
    "synthetic" when the QSL holds random samples (`data.source=synthetic`);
    `loadgen_version`: what LoadGen's log says it is (None: not asked)."""
    reasons = []
    if samples == "synthetic":
        reasons.append("synthetic samples (random inputs, not the benchmark's data)")
    if profile != MLPERF_PROFILE:
        reasons.append(f"the {profile!r} profile (not the v0.7 durations, query counts and "
                       "seeds)")
    if not benchmark_model_and_data:
        reasons.append(f"the {config!r} config's model and data are not the {mlperf_name} "
                       "benchmark's")
    if params_source.startswith("random_init"):
        reasons.append("randomly initialised parameters (not a trained model)")
    if params_source.startswith("checkpoint:"):
        reasons.append("weights trained by tpubench (a closed v0.7 result serves the reference "
                       "weights MLPerf provides)")
    if mlperf_name in MOBILE:
        reasons.append(f"{mlperf_name} is an MLPerf Mobile benchmark, not an MLPerf Inference "
                       "v0.7 one")
    if loadgen_version is not None and not str(loadgen_version).startswith(V07_LOADGEN_VERSION):
        reasons.append(f"LoadGen {loadgen_version or '(version not logged)'}, not the v0.7 "
                       "release (built from mlcommons/inference's v0.7 tag, which the v0.7 "
                       "rules require)")
    return reasons


def result_label(summary: dict[str, Any]) -> str:
    """'MLPerf Inference v0.7 resnet50' for an MLPerf result; otherwise 'NOT AN MLPERF RESULT
    (reasons): <workload> <config> (modelled on <name>)'."""
    if summary.get("mlperf_result"):
        return f"MLPerf Inference v0.7 {summary['benchmark']}"
    reasons = "; ".join(summary.get("not_mlperf_reasons", [])) or "unlabelled run"
    what = f"{summary.get('workload', '?')} {summary.get('config', '?')}"
    return f"{NOT_MLPERF} ({reasons}): {what}, modelled on {summary.get('modelled_on')}"


def label_fields(mlperf_name: str, reasons: list[str]) -> dict[str, Any]:
    """The summary fields that say what the result is."""
    is_result = not reasons
    return {
        "mlperf_result": is_result,
        "benchmark": mlperf_name if is_result else f"{mlperf_name} ({NOT_MLPERF})",
        "modelled_on": mlperf_name,
        "not_mlperf_reasons": reasons,
    }


def mark_loadgen_summary(outdir: str | pathlib.Path, label: str) -> None:
    """Put the label on top of LoadGen's `mlperf_log_summary.txt` of a non-MLPerf run (LoadGen's
    lines are kept unchanged below it)."""
    path = pathlib.Path(outdir) / "mlperf_log_summary.txt"
    if not path.exists():
        return
    banner = "=" * 80
    path.write_text(f"{banner}\n{label}\n(tpubench: LoadGen's VALID below means the settings "
                    f"of this run were met, not that this is an MLPerf result.)\n{banner}\n"
                    + path.read_text())
