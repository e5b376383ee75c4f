"""Configs: the keys every workload config shares, and loading a named config with overrides.

A workload's config files (`workloads/<name>/configs/<config>.py`) define `get_config()` that
starts from `base_config()` and sets the benchmark's values. Overrides use the absl spelling
`--config.KEY=VALUE`; an unknown key is a `UsageError`, never silently added. `tpubench run` and
the absl mains (`python -m workloads.<name>.main`) both parse overrides here (`split_args`,
`apply_overrides`), so the same text means the same value everywhere. An override of an MLPerf
config that changes the benchmark itself makes the run open division (`tpubench.division`).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import ml_collections

from tpubench import division
from tpubench.errors import UsageError

WORKLOADS_ROOT = pathlib.Path(__file__).resolve().parent.parent / "workloads"


def base_config() -> ml_collections.ConfigDict:
    """The keys the harness reads from every config (workloads add their own)."""
    c = ml_collections.ConfigDict()
    c.workload = ""
    c.config_name = ""
    c.is_mlperf = False  # True only for the closed-division MLPerf setup ("full" configs).
    c.dataset = ""
    c.data_source = "synthetic"  # "tfds", "synthetic", or a workload's small real dataset.
    c.data_dir = os.environ.get("TPUBENCH_DATA_DIR", "")
    c.seed = 0

    c.global_batch_size = 32
    c.eval_batch_size = 32
    c.train_samples = 0
    c.eval_samples = 0
    c.num_classes = 0

    c.target_metric = "accuracy"
    c.target_value = 1.0
    c.higher_is_better = True

    # Clock and cadence.
    c.steps_per_dispatch = 1  # train steps per host dispatch (lax.scan over a block).
    # lax.scan's unroll for that block. On TPU/GPU keep 1 (a rolled loop). XLA:CPU runs
    # convolutions inside a rolled loop ~4x slower than straight-line code (measured; see
    # benchmarks/README.md), so conv-net CPU configs use steps_per_dispatch=1 (no loop at all).
    c.scan_unroll = 1
    c.eval_every_samples = 0  # 0 = once per epoch (train_samples).
    c.eval_offset_samples = 0  # first eval at offset + eval_every_samples.
    c.max_train_samples = 0  # budget; 0 = 100 epochs. Reaching it = "aborted".
    c.max_time_s = 0.0  # wall-clock budget of the timed region; 0 = none.
    c.cpu_max_steps_in_flight = 16  # simulated CPU devices die with too many queued collectives
    # MLPerf: "You must flush the cache or restart the system prior to benchmarking." Tried when
    # allowed (root); the log's cache_clear says whether it happened.
    c.clear_page_cache = os.environ.get("TPUBENCH_CLEAR_PAGE_CACHE", "1") != "0"
    # JAX's persistent compilation cache (tpubench/compile_cache.py): a second run of the same
    # config loads its executables instead of compiling them (untimed init only).
    c.compile_cache = os.environ.get("TPUBENCH_COMPILE_CACHE", "1") != "0"  # False: none used
    c.compile_cache_dir = ""  # "" = the default (compile_cache.default_dir)

    # Numerics and parallelism (harness features, not workload code).
    c.dtype = "float32"  # compute dtype: float32 | bfloat16
    c.parallelism = "jit"  # "jit" (NamedSharding over the mesh) or "pmap" (data parallel)
    c.mesh = ml_collections.ConfigDict({"data": -1, "fsdp": 1, "tensor": 1})
    c.dcn_mesh = ml_collections.ConfigDict({"data": 1, "fsdp": 1, "tensor": 1})
    c.fsdp_min_size = 2**14  # params smaller than this stay replicated under FSDP
    c.model_bn_span = 0  # examples per batch-norm statistics group; 0 = the global batch

    # Watching a run: metrics.jsonl + TensorBoard files in the workdir (process 0, always on).
    # profile_steps=N: a jax.profiler trace of the N steps after the first dispatch (warm-up),
    # into <workdir>/profile. The trace runs on the clock, so a profiled run is open division.
    c.profile_steps = 0

    # Checkpoints (orbax). Preemption (SIGTERM) always saves.
    c.checkpoint_every_evals = 0  # 0 = only on preemption and at the end of the run
    c.checkpoint_keep = 2

    # MLPerf log metadata.
    c.submission_org = "tpubench"
    c.submission_platform = ""  # "" = derived from the devices, e.g. "1xcpu"
    c.submission_division = "open"
    c.submission_status = "research"
    # Set by `tpubench.division` when overrides take an MLPerf config out of closed division.
    c.open_reasons = ()
    return c


def config_names(workload: str) -> list[str]:
    """The named configs a workload ships (its `configs/*.py` files), sorted."""
    directory = WORKLOADS_ROOT / workload / "configs"
    return sorted(
        p.stem for p in directory.glob("*.py")
        if not p.stem.startswith("_") and "def get_config(" in p.read_text()
    )


def config_path(workload: str, config: str) -> pathlib.Path:
    """Resolve a config name ("mini") or a path ("workloads/resnet/configs/mini.py")."""
    if config.endswith(".py"):
        path = pathlib.Path(config)
        if not path.exists():
            raise UsageError(f"Config file {config!r} does not exist.")
        return path
    directory = WORKLOADS_ROOT / workload / "configs"
    path = directory / f"{config}.py"
    if not path.exists():
        known = config_names(workload)
        raise UsageError(
            f"Unknown config {config!r} for workload {workload!r}. Known configs: "
            f"{', '.join(known) or 'none'}. Pass one of them (--config=mini) or a path to a "
            "config file (--config=workloads/<name>/configs/<config>.py)."
        )
    return path


def load_file(path: str | os.PathLike) -> ml_collections.ConfigDict:
    """Execute a config file and return its `get_config()`, with `config_name` set."""
    path = pathlib.Path(path)
    spec = importlib.util.spec_from_file_location(f"_tpubench_config_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cfg = module.get_config()
    with cfg.unlocked():
        cfg.config_name = cfg.get("config_name") or path.stem
    return cfg


def load(
    workload: str, config: str, overrides: Mapping[str, Any] | Sequence[str] = ()
) -> ml_collections.ConfigDict:
    """Load `workload`'s named config and apply overrides (a dict, or `KEY=VALUE` strings).

    Overrides of an MLPerf config that closed division does not allow make it open division
    (`is_mlperf=False`, `submission_division="open"`, `open_reasons`; see `tpubench.division`).
    """
    cfg = load_file(config_path(workload, config))
    if not cfg.get("workload"):
        with cfg.unlocked():
            cfg.workload = workload
    mlperf = bool(cfg.get("is_mlperf", False))
    changed = apply_overrides(cfg, overrides)
    division.apply(cfg, changed, mlperf)
    return cfg


_OVERRIDE_FORM = (
    "Overrides look like --config.KEY=VALUE, with the value in the same argument (e.g. "
    "--config.global_batch_size=64, --config.mesh.data=2, --config.dtype=bfloat16)."
)


def parse_override(text: str) -> tuple[str, str]:
    """'--config.a.b=3' or 'a.b=3' -> ('a.b', '3')."""
    text = text.removeprefix("--").removeprefix("config.")
    if "=" not in text:
        raise UsageError(f"Override {text!r} has no value. {_OVERRIDE_FORM}")
    key, value = text.split("=", 1)
    if not key:
        raise UsageError(f"Override {text!r} has no key. {_OVERRIDE_FORM}")
    return key, value


def split_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split command-line words into `--config.KEY=VALUE` overrides and everything else.

    Both entry points use this, so `--config.KEY VALUE` (value in the next word) is refused the
    same way everywhere rather than read as a flag by one parser and a stray word by the other.
    """
    overrides, rest = [], []
    for arg in argv:
        if arg.startswith("--config."):
            parse_override(arg)  # refuses a missing "=VALUE" now, before anything runs
            overrides.append(arg)
        else:
            rest.append(arg)
    return overrides, rest


_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def _coerce(key: str, raw: Any, current: Any) -> Any:
    """`raw` (text from the command line, or a Python value) as the type of `current`."""
    if isinstance(current, ml_collections.ConfigDict):
        raise UsageError(
            f"--config.{key} is a section, not a value: set its keys instead, e.g. "
            + ", ".join(f"--config.{key}.{k}=..." for k in sorted(current.keys())) + "."
        )
    if not isinstance(raw, str):
        if isinstance(current, tuple) and isinstance(raw, list):
            return tuple(raw)
        return raw
    if isinstance(current, str):
        return raw
    if isinstance(current, bool):
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise UsageError(f"--config.{key} expects true or false, got {raw!r}.")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError) as e:
        if current is None:
            return raw  # an unset (None) key takes text as text
        raise UsageError(
            f"--config.{key}: cannot parse {raw!r} as a {type(current).__name__} "
            f"(the config's value is {current!r})."
        ) from e
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(current, tuple) and isinstance(value, list):
        value = tuple(value)
    if isinstance(current, list) and isinstance(value, tuple):
        value = list(value)
    if current is not None and (
        not isinstance(value, type(current)) or isinstance(value, bool) != isinstance(current, bool)
    ):
        raise UsageError(
            f"--config.{key} expects {type(current).__name__} (like {current!r}), got {raw!r}."
        )
    return value


def apply_overrides(
    cfg: ml_collections.ConfigDict, overrides: Mapping[str, Any] | Sequence[str]
) -> list[str]:
    """Set dotted keys in place; unknown keys raise `UsageError` listing the known ones.

    Returns the keys whose value changed (an override equal to the config's value changes
    nothing), in order.
    """
    items = overrides.items() if isinstance(overrides, Mapping) else map(parse_override, overrides)
    changed: list[str] = []
    for key, raw in items:
        node = cfg
        parts = key.split(".")
        for i, part in enumerate(parts[:-1]):
            if part not in node or not isinstance(node[part], ml_collections.ConfigDict):
                where = ".".join(parts[:i]) or "the config"
                raise UsageError(
                    f"Unknown config key {key!r}: {where} has no section {part!r}. Sections "
                    "there: " + (", ".join(sorted(
                        k for k, v in node.items() if isinstance(v, ml_collections.ConfigDict)))
                        or "none") + ". Run `tpubench list` for the configs."
                )
            node = node[part]
        leaf = parts[-1]
        if leaf not in node:
            raise UsageError(
                f"Unknown config key {key!r}. Known keys here: {', '.join(sorted(node.keys()))}."
            )
        if key in division.DERIVED:
            division.check_override(cfg, key, raw)
        value = _coerce(key, raw, node[leaf])
        division.check_override(cfg, key, value)
        if value != node[leaf]:
            with cfg.unlocked():
                node[leaf] = value
            if key not in changed:
                changed.append(key)
    return changed
