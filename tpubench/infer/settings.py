"""LoadGen `TestSettings` for each scenario, set explicitly from a named profile.

Nothing comes from `mlperf.conf` or `user.conf` (we never call `TestSettings.FromConfig`), and a
stray `audit.config` in the working directory, which LoadGen applies silently, is refused before
the run (`check_no_audit_config`). Every field LoadGen reads for the scenario is set here and
echoed into `summary.json`.

Profiles:
  quick: seconds per scenario, for tests and laptops. Query counts are the smallest for which
    LoadGen's early-stopping estimate can pass (Server p99: ~459 queries; MultiStream p99: 662;
    SingleStream p90: 64).
  v0.7: the MLPerf Inference v0.7 durations and query counts (60 s; SingleStream 1,024 queries;
    Server and MultiStream 270,336 queries; Offline >= 24,576 samples in one query) and the
    v0.7 `mlperf.conf` RNG seeds.

MultiStream: LoadGen >= 2.0 changed its meaning. v0.7 issued a query of N samples every 50 ms
and the metric was the largest N whose p99 met the interval; LoadGen 6 issues the next query
when the previous one completes and reports the p99 per-query latency for a fixed N
(`multi_stream_samples_per_query`, 8 by default). We run LoadGen's current MultiStream and
report, next to it, whether the p99 per-query latency meets the v0.7 bound for that N.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import pathlib

import mlperf_loadgen as lg

from tpubench.errors import UsageError


class Scenario(enum.Enum):
    """The four LoadGen scenarios (names as on the command line and in the logs)."""

    OFFLINE = "Offline"
    SERVER = "Server"
    SINGLE_STREAM = "SingleStream"
    MULTI_STREAM = "MultiStream"

    @classmethod
    def parse(cls, text: str) -> Scenario:
        """'Offline' / 'offline' / 'single_stream' -> Scenario; `UsageError` otherwise."""
        key = text.replace("_", "").replace("-", "").lower()
        for s in cls:
            if s.value.lower() == key:
                return s
        raise UsageError(
            f"Unknown scenario {text!r}. Scenarios: {', '.join(s.value for s in cls)}."
        )


class Mode(enum.Enum):
    """performance (timed, metric from the latencies) or accuracy (every sample once, logged)."""

    PERFORMANCE = "performance"
    ACCURACY = "accuracy"


# The MLPerf Inference v0.7 RNG seeds (qsl, sample_index, schedule), as in the v0.7
# `mlperf.conf` and in the v0.7 submission checker, which rejects a result run with other seeds:
# mlcommons/inference, tools/submission/submission-checker.py, MODEL_CONFIG["v0.7"]["seeds"].
# (7322528924094909334, 1570999273408051088, 3507442325620259414 are the v1.0 seeds.)
V07_SEEDS = (12786827339337101903, 12640797754436136668, 3135815929913719677)


@dataclasses.dataclass(frozen=True)
class Profile:
    """Durations and query counts of a profile, per scenario."""

    name: str
    min_duration_ms: dict[Scenario, int]
    min_query_count: dict[Scenario, int]
    offline_min_samples: int
    seeds: tuple[int, int, int]  # qsl, sample_index, schedule

PROFILES = {
    "quick": Profile(
        name="quick",
        min_duration_ms={
            Scenario.OFFLINE: 500,
            Scenario.SERVER: 1000,
            Scenario.SINGLE_STREAM: 500,
            Scenario.MULTI_STREAM: 500,
        },
        min_query_count={
            Scenario.OFFLINE: 1,
            Scenario.SERVER: 500,
            Scenario.SINGLE_STREAM: 100,
            Scenario.MULTI_STREAM: 700,
        },
        offline_min_samples=0,
        seeds=(0, 0, 0),
    ),
    "v0.7": Profile(
        name="v0.7",
        min_duration_ms={s: 60_000 for s in Scenario},
        min_query_count={
            Scenario.OFFLINE: 1,
            Scenario.SERVER: 270_336,
            Scenario.SINGLE_STREAM: 1_024,
            Scenario.MULTI_STREAM: 270_336,
        },
        offline_min_samples=24_576,
        seeds=V07_SEEDS,
    ),
}


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """Everything that decides one LoadGen run; `to_loadgen()` builds the `TestSettings`.

    `expected_qps` is the Offline expected throughput or the Server target QPS;
    `expected_latency_ms` the SingleStream/MultiStream expected query latency (LoadGen sizes
    its query schedule with it).
    """

    scenario: Scenario
    mode: Mode
    profile: str
    expected_qps: float
    latency_bound_ms: float
    expected_latency_ms: float = 1.0
    multistream_samples_per_query: int = 8
    performance_sample_count: int = 0  # 0 = the QSL's own count

    def to_loadgen(self) -> lg.TestSettings:
        """The explicit `TestSettings` (no config file is read)."""
        if self.profile not in PROFILES:
            raise UsageError(f"Unknown profile {self.profile!r}. Profiles: {', '.join(PROFILES)}.")
        prof = PROFILES[self.profile]
        ts = lg.TestSettings()
        ts.scenario = getattr(lg.TestScenario, self.scenario.value)
        ts.mode = (
            lg.TestMode.PerformanceOnly
            if self.mode is Mode.PERFORMANCE
            else lg.TestMode.AccuracyOnly
        )
        ts.min_duration_ms = prof.min_duration_ms[self.scenario]
        ts.max_duration_ms = 0
        ts.min_query_count = prof.min_query_count[self.scenario]
        ts.max_query_count = 0
        ts.qsl_rng_seed, ts.sample_index_rng_seed, ts.schedule_rng_seed = prof.seeds
        if self.performance_sample_count:
            ts.performance_sample_count_override = self.performance_sample_count
        expected_ns = max(1, int(self.expected_latency_ms * 1e6))
        bound_ns = max(1, int(self.latency_bound_ms * 1e6))
        if self.scenario is Scenario.OFFLINE:
            # LoadGen issues one query of ~expected_qps * min_duration samples.
            floor = prof.offline_min_samples * 1000.0 / prof.min_duration_ms[self.scenario]
            ts.offline_expected_qps = max(float(self.expected_qps), floor)
        elif self.scenario is Scenario.SERVER:
            ts.server_target_qps = float(self.expected_qps)
            ts.server_target_latency_ns = bound_ns
            ts.server_target_latency_percentile = 0.99
        elif self.scenario is Scenario.SINGLE_STREAM:
            ts.single_stream_expected_latency_ns = expected_ns
            ts.single_stream_target_latency_percentile = 0.90
        else:
            ts.multi_stream_expected_latency_ns = expected_ns
            ts.multi_stream_samples_per_query = int(self.multistream_samples_per_query)
            ts.multi_stream_target_latency_percentile = 0.99
        return ts

    def describe(self) -> dict:
        """The settings as they go to `summary.json`."""
        d = dataclasses.asdict(self)
        d["scenario"] = self.scenario.value
        d["mode"] = self.mode.value
        prof = PROFILES[self.profile]
        d["min_duration_ms"] = prof.min_duration_ms[self.scenario]
        d["min_query_count"] = prof.min_query_count[self.scenario]
        return d


def check_no_audit_config(directory: str | os.PathLike | None = None) -> None:
    """LoadGen silently overrides the settings from `./audit.config`: refuse to run beside one."""
    path = pathlib.Path(directory or os.getcwd()) / "audit.config"
    if path.exists():
        raise UsageError(
            f"{path} exists: LoadGen would silently override the test settings from it. "
            "Remove it (it belongs to compliance tests only) or run from another directory."
        )
