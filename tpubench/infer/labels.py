"""What a `tpubench infer` result may call itself.

Only a run of the `v0.7` profile, on the benchmark's own model and data, with trained
parameters, may carry an MLPerf Inference benchmark name (`resnet50`, `bert-99`) without a
qualifier. Every other run (the `quick` profile, a mini model or dataset, random parameters) is
labelled "NOT AN MLPERF RESULT" with the reasons, in the headline, in `summary.json`, and at the
top of LoadGen's own `mlperf_log_summary.txt` (LoadGen writes "Result is : VALID" for any run
whose settings it met, whatever those settings were).
"""

from __future__ import annotations

import pathlib
from typing import Any

NOT_MLPERF = "NOT AN MLPERF RESULT"
MLPERF_PROFILE = "v0.7"


def not_mlperf_reasons(profile: str, benchmark_model_and_data: bool, config: str,
                       params_source: str, mlperf_name: str, samples: str = "") -> list[str]:
    """Why a run is not an MLPerf Inference v0.7 result (empty: it is one). `samples`:
    "synthetic" when the QSL holds random samples (`data.source=synthetic`)."""
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
