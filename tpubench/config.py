"""Configs: the keys every workload config shares, and loading a named config with overrides.

A workload's config files (`workloads/<name>/configs/<config>.py`) define `get_config()` that
starts from `base_config()` (sections model, optimizer, schedule, data, eval, run, submission)
and sets the benchmark's values. Overrides follow `ml_collections.config_flags`
(`--config.SECTION.KEY=VALUE`); an unknown key is a `UsageError`, never silently added.
`tpubench run` and the absl mains (`python -m workloads.<name>.main`) both parse their command
line with `parse_command_line`, so the same words mean the same config everywhere. An override
of an MLPerf config that changes the benchmark itself makes the run open division
(`tpubench.division`).
"""

from __future__ import annotations

import copy
import importlib.util
import math
import os
import pathlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ml_collections
from absl import flags
from ml_collections import config_flags

from tpubench import division, registry
from tpubench.errors import UsageError

WORKLOADS_ROOT = pathlib.Path(__file__).resolve().parent.parent / "workloads"


def base_config() -> ml_collections.ConfigDict:
    """Every key the harness reads, in the sections every workload config shares.

    Top level: identity only (`workload`, `config_name`, `is_mlperf`). Workloads add their own
    keys inside the sections (e.g. `model.num_filters`, `optimizer.momentum`, `eval.beam_size`),
    never at the top level; a section a workload leaves empty still exists.

    One name and one unit per concept across workloads:
      optimizer.learning_rate  the peak learning rate (the value after warmup), whatever the
                               optimizer; for the Transformer's rsqrt schedule, the reference's
                               `learning_rate` constant it scales (as MLPerf logs it).
      optimizer.beta_1/beta_2/epsilon/weight_decay/momentum  the optimizer's own constants.
      schedule.*_steps / *_step  lengths and positions in optimizer steps (updates). Where an
                               MLPerf reference states epochs (ResNet: warmup and decay), the
                               config gives steps = round(epochs * ceil(train_samples /
                               global_batch_size)) (`steps_for_epochs`), and the workload logs the
                               epochs back (`epochs_for_steps`). A global_batch_size override does
                               not rescale step counts: set the schedule keys with it.
      schedule.warmup_steps    linear warmup length; schedule.train_steps: the step at which the
                               decay reaches its end value; schedule.decay_power: polynomial power;
                               schedule.end_learning_rate: the value it decays to.
      data.* / eval.* / run.*  sizes and cadences in samples (`eval.every_samples`,
                               `run.max_train_samples`), as the MLPerf rules count them.
    """
    c = ml_collections.ConfigDict()
    c.workload = ""
    c.config_name = ""
    c.is_mlperf = False  # True only for the closed-division MLPerf setup ("full" configs).

    # The network: architecture, numerics, loss.
    c.model = ml_collections.ConfigDict()
    c.model.dtype = "float32"  # compute dtype: float32 | bfloat16
    c.model.num_classes = 0  # classes of the output (the harness's synthetic eval draws labels)
    c.model.bn_span = 0  # examples per batch-norm statistics group; 0 = the global batch

    # The update rule: `name` and the peak `learning_rate`; workloads add their constants.
    c.optimizer = ml_collections.ConfigDict()
    c.optimizer.name = ""
    c.optimizer.learning_rate = 0.0

    # The learning-rate schedule, in steps (see above); workloads add their decay keys.
    c.schedule = ml_collections.ConfigDict()
    c.schedule.warmup_steps = 0

    # What is trained on.
    c.data = ml_collections.ConfigDict()
    c.data.dataset = ""
    c.data.source = "synthetic"  # "tfds", "synthetic", or a workload's small real dataset.
    c.data.dir = os.environ.get("TPUBENCH_DATA_DIR", "")
    c.data.global_batch_size = 32
    c.data.train_samples = 0  # one epoch

    # Quality: the eval set, its cadence and the target.
    c.eval = ml_collections.ConfigDict()
    c.eval.batch_size = 32
    c.eval.samples = 0
    c.eval.every_samples = 0  # 0 = once per epoch (data.train_samples).
    c.eval.offset_samples = 0  # first eval at offset + every_samples.
    c.eval.target_metric = "accuracy"
    c.eval.target_value = 1.0
    c.eval.higher_is_better = True
    # True while no measured run of this config has shown that the target is reachable and
    # meaningful (a mini under construction): `tpubench list`, the run's output and
    # summary.json say so.
    c.eval.target_provisional = False

    # How the run executes: harness settings, not the benchmark (closed division leaves them
    # free; `tpubench.division`).
    c.run = ml_collections.ConfigDict()
    c.run.seed = 0
    c.run.steps_per_dispatch = 1  # train steps per host dispatch (lax.scan over a block).
    # lax.scan's unroll for that block. On TPU/GPU keep 1 (a rolled loop). XLA:CPU runs
    # convolutions inside a rolled loop ~4x slower than straight-line code (measured; see
    # benchmarks/README.md), so conv-net CPU configs use steps_per_dispatch=1 (no loop at all).
    c.run.scan_unroll = 1
    c.run.max_train_samples = 0  # budget; 0 = 100 epochs. Reaching it = "aborted".
    c.run.max_time_s = 0.0  # wall-clock budget of the timed region; 0 = none.
    c.run.cpu_max_steps_in_flight = 16  # simulated CPU devices die with too many queued collectives
    # MLPerf: "You must flush the cache or restart the system prior to benchmarking." Tried when
    # allowed (root); the log's cache_clear says whether it happened.
    c.run.clear_page_cache = os.environ.get("TPUBENCH_CLEAR_PAGE_CACHE", "1") != "0"
    # JAX's persistent compilation cache (tpubench/platform/compile_cache.py): a second run of the
    # same config loads its executables instead of compiling them (untimed init only).
    c.run.compile_cache = os.environ.get("TPUBENCH_COMPILE_CACHE", "1") != "0"  # False: none used
    c.run.compile_cache_dir = ""  # "" = the default (compile_cache.default_dir)
    c.run.parallelism = "jit"  # "jit" (NamedSharding over the mesh) or "pmap" (data parallel)
    c.run.mesh = ml_collections.ConfigDict({"data": -1, "fsdp": 1, "tensor": 1})
    c.run.dcn_mesh = ml_collections.ConfigDict({"data": 1, "fsdp": 1, "tensor": 1})
    c.run.fsdp_min_size = 2**14  # params smaller than this stay replicated under FSDP
    # Watching a run: metrics.jsonl + TensorBoard files in the workdir (process 0, always on),
    # and a progress line (a bar on a terminal) every progress_every_s seconds of wall time and
    # at every eval, made from metrics read one dispatch late (tpubench/loops/reporter.py).
    c.run.progress_every_s = 15.0
    # profile_steps=N: a jax.profiler trace of the N steps after the first dispatch (warm-up),
    # into <workdir>/profile. The trace runs on the clock, so a profiled run is open division.
    c.run.profile_steps = 0
    # Checkpoints (orbax). Preemption (SIGTERM) always saves.
    c.run.checkpoint_every_evals = 0  # 0 = only on preemption and at the end of the run
    c.run.checkpoint_keep = 2  # >= 2: the previous one is the fallback for a damaged newest

    # MLPerf log metadata.
    c.submission = ml_collections.ConfigDict()
    c.submission.org = "tpubench"
    c.submission.platform = ""  # "" = derived from the devices, e.g. "1xcpu"
    c.submission.division = "open"
    c.submission.status = "research"
    # Set by `tpubench.division` when overrides take an MLPerf config out of closed division.
    c.submission.open_reasons = ()
    return c


SECTIONS = ("model", "optimizer", "schedule", "data", "eval", "run", "submission")


def steps_for_epochs(epochs: float, train_samples: int, global_batch_size: int) -> int:
    """Optimizer steps in `epochs` epochs: round(epochs * ceil(train_samples / batch))."""
    return int(round(epochs * math.ceil(train_samples / global_batch_size)))


def epochs_for_steps(steps: int, train_samples: int, global_batch_size: int) -> float:
    """The epochs `steps` optimizer steps cover (the inverse of `steps_for_epochs`)."""
    return steps / math.ceil(train_samples / global_batch_size)


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


def _module(path: pathlib.Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"_tpubench_config_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def closed_needs(workload: str, config: str) -> str:
    """What a closed-division run of an MLPerf config needs beyond the code (weights, data,
    preparation), as its file's `CLOSED_NEEDS` says; "" when it says nothing. `tpubench list`
    prints it; the run itself checks (`Workload.closed_requirements`)."""
    return str(getattr(_module(config_path(workload, config)), "CLOSED_NEEDS", ""))


def load_file(path: str | os.PathLike) -> ml_collections.ConfigDict:
    """Execute a config file and return its `get_config()`, with `config_name` set."""
    path = pathlib.Path(path)
    cfg = _module(path).get_config()
    with cfg.unlocked():
        cfg.config_name = cfg.get("config_name") or path.stem
    return cfg


def load(
    workload: str, config: str, overrides: Mapping[str, Any] | Sequence[str] = ()
) -> ml_collections.ConfigDict:
    """Load `workload`'s named config and apply overrides.

    `overrides` is either a mapping of dotted keys to Python values (`{"run.seed": 3}`), or
    command-line words (`["--config.run.seed=3"]`, `["--config.run.seed", "3"]`), parsed exactly
    as `tpubench run` and the absl mains parse them (`parse_command_line`). Overrides of an MLPerf
    config that closed division does not allow make it open division (`tpubench.division`).
    """
    if isinstance(overrides, Mapping):
        cfg = _load_named(workload, config)
        mlperf = bool(cfg.is_mlperf)
        changed = apply_overrides(cfg, overrides)
        division.apply(cfg, changed + derive(cfg, changed), mlperf)
        return cfg
    cfg, _, positional = parse_command_line(workload, [f"--config={config}", *overrides])
    if positional:
        raise UsageError(f"Unexpected arguments {' '.join(positional)!r} among the overrides. "
                         + _OVERRIDE_FORM)
    return cfg


def _load_named(workload: str, config: str) -> ml_collections.ConfigDict:
    cfg = load_file(config_path(workload, config))
    if not cfg.get("workload"):
        with cfg.unlocked():
            cfg.workload = workload
    return cfg


_OVERRIDE_FORM = (
    "Overrides follow ml_collections.config_flags: --config.SECTION.KEY=VALUE or "
    "--config.SECTION.KEY VALUE, --config.SECTION.FLAG / --noconfig.SECTION.FLAG for booleans, "
    "tuples as --config.KEY='(1, 2)' (e.g. --config.data.global_batch_size=64, "
    "--config.run.mesh.data=2, --config.model.dtype=bfloat16); `tpubench list` names the configs."
)
_CONFIG_VALUE = re.compile(r"^--?config(=|$)")
_OVERRIDE = re.compile(r"^--?(?:no)?config\.([^=]*)")


def _override_keys(argv: Sequence[str]) -> list[str]:
    """The dotted keys that `--config.KEY...` / `--noconfig.KEY` words of `argv` override."""
    return [m[1] for m in map(_OVERRIDE.match, argv) if m]


def split_overrides(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(override words, other words) of a command line whose own parser is argparse (`tpubench
    fit`, `prepare`, `infer`): `--config.KEY=VALUE`, `--noconfig.KEY`, and `--config.KEY VALUE`
    (the value word goes with its flag when it does not start with "-"; a boolean written
    `--config.KEY` is followed by another flag or by nothing)."""
    overrides: list[str] = []
    rest: list[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        if _OVERRIDE.match(word):
            overrides.append(word)
            pair = ("=" not in word and not word.lstrip("-").startswith("no")
                    and i + 1 < len(words) and not words[i + 1].startswith("-"))
            if pair:
                overrides.append(words[i + 1])
                i += 1
        else:
            rest.append(word)
        i += 1
    return overrides, rest


def _leaves(node: ml_collections.ConfigDict, prefix: str = "") -> list[str]:
    out = []
    for k, v in node.items():
        if isinstance(v, ml_collections.ConfigDict):
            out += _leaves(v, f"{prefix}{k}.")
        else:
            out.append(prefix + k)
    return out


def check_key(cfg: ml_collections.ConfigDict, key: str) -> Any:
    """`key`'s current value; `UsageError` (listing the known keys) for an unknown key, a section
    given a value, or a key only the config file sets."""
    node: Any = cfg
    parts = key.split(".")
    for i, part in enumerate(parts):
        where = ".".join(parts[:i])
        if not isinstance(node, ml_collections.ConfigDict) or part not in node:
            if not isinstance(node, ml_collections.ConfigDict):
                raise UsageError(f"Unknown config key {key!r}: {where} is a value, not a section. "
                                 + _OVERRIDE_FORM)
            same = [k for k in _leaves(cfg) if k.rsplit(".", 1)[-1] == parts[-1]]
            hint = f" Did you mean {', '.join('--config.' + k for k in same)}?" if same else ""
            raise UsageError(
                f"Unknown config key {key!r}.{hint} Known keys in "
                f"{where or 'the top level'}: {', '.join(sorted(node.keys()))}. Every key but "
                f"workload, config_name and is_mlperf lives in a section ({', '.join(SECTIONS)})."
            )
        node = node[part]
    if isinstance(node, ml_collections.ConfigDict):
        raise UsageError(
            f"--config.{key} is a section, not a value: set its keys instead, e.g. "
            + ", ".join(f"--config.{key}.{k}=..." for k in sorted(node.keys())) + "."
        )
    if key in division.DERIVED:
        division.check_override(cfg, key, node)
    return node


def parse_command_line(
    workload: str,
    argv: Sequence[str],
    define: Callable[[flags.FlagValues], None] | None = None,
    usage: str = "",
) -> tuple[ml_collections.ConfigDict, flags.FlagValues, list[str]]:
    """Parse `argv` (no program name) with `ml_collections.config_flags` rules; the one parser of
    `tpubench run`, the absl mains and `load`.

    `--config=NAME|FILE` (or `--config NAME`) names `workload`'s config; `define(fv)` adds the
    caller's own flags (`--workdir`, ...) to the fresh `FlagValues`. Overrides are
    `config_flags.DEFINE_config_dict` flags: `--config.KEY=VALUE` or `--config.KEY VALUE`,
    booleans also `--config.KEY` / `--noconfig.KEY`, tuples `'(1, 2)'` or a repeated flag, ints
    refuse floats, floats take ints; a key set to None cannot be overridden (config_flags has no
    type for it). Refused with a `UsageError` before parsing: an unknown key (the known ones are
    listed), a section given a value (config_flags would take a dict literal), an override
    before `--config` (config_flags' FlagOrderError). Returns the config (division applied), the
    parsed flags, and the positional words.
    """
    argv = list(argv)
    where = [i for i, a in enumerate(argv) if _CONFIG_VALUE.match(a)]
    tail = f" Usage: {usage}" if usage else ""
    if not where:
        raise UsageError(f"Missing --config (a config name such as mini, or a config file).{tail}")
    if len(where) > 1:
        raise UsageError(f"--config is given {len(where)} times; give it once.{tail}")
    i = where[0]
    if "=" in argv[i]:
        name, rest = argv[i].split("=", 1)[1], argv[:i] + argv[i + 1:]
    elif i + 1 < len(argv):
        name, rest = argv[i + 1], argv[:i] + argv[i + 2:]
    else:
        raise UsageError(f"--config has no value.{tail}")
    early = _override_keys(argv[:i])
    if early:
        raise UsageError(f"--config.{early[0]} comes before --config: name the config first, "
                         f"then override its keys.{tail}")
    cfg = _load_named(workload, name)
    mlperf = bool(cfg.is_mlperf)
    for key in _override_keys(rest):
        check_key(cfg, key)
    before = copy.deepcopy(cfg)
    fv = flags.FlagValues()
    if define is not None:
        define(fv)
    words = ["tpubench", *rest]
    try:
        config_flags.DEFINE_config_dict("config", cfg, flag_values=fv, sys_argv=words,
                                        lock_config=False)
        positional = fv(words)[1:]
    except flags.Error as e:  # about an override: the same paragraph from every entry point
        about_override = "config." in str(e)
        raise UsageError(f"{e}. {_OVERRIDE_FORM}" if about_override else f"{e}.{tail}") from None
    given = list(fv["config"].override_values)
    for key in given:
        _check_tuple(key, _get(cfg, key), _get(before, key))
        division.check_override(before, key, _get(cfg, key))
    changed = [k for k in given if _get(cfg, k) != _get(before, k)]
    division.apply(cfg, changed + derive(cfg, changed), mlperf)
    return cfg, fv, positional


def derive(cfg: ml_collections.ConfigDict, changed: Sequence[str]) -> list[str]:
    """After overrides `changed`, the workload's `derive` recomputes what its config file derives
    from them (`Workload.derive`); returns the keys it recomputed. Imports the workload's class
    only when something was overridden."""
    if not changed or cfg.get("workload") not in registry.names():
        return []
    return registry.class_for(cfg).derive(cfg, list(changed))


def _check_tuple(key: str, value: Any, old: Any) -> None:
    """config_flags parses a tuple's elements as literals (or text) whatever the config holds;
    refuse elements of another type than the config's (`model.stage_sizes=oops`)."""
    kinds = {type(v) for v in old} if isinstance(old, tuple) else set()
    if len(kinds) != 1 or not isinstance(value, tuple):
        return
    kind = kinds.pop()
    if not all(isinstance(v, kind) and isinstance(v, bool) == (kind is bool) for v in value):
        raise UsageError(f"--config.{key} expects a tuple of {kind.__name__} (like {old!r}), got "
                         f"{value!r}. {_OVERRIDE_FORM}")


def _get(cfg: ml_collections.ConfigDict, key: str) -> Any:
    node: Any = cfg
    for part in key.split("."):
        node = node[part]
    return node


def apply_overrides(cfg: ml_collections.ConfigDict, values: Mapping[str, Any]) -> list[str]:
    """Set dotted keys to Python values in place (the programmatic overrides of `load`); unknown
    keys are a `UsageError` listing the known ones. Returns the keys whose value changed."""
    changed: list[str] = []
    for key, value in values.items():
        current = check_key(cfg, key)
        division.check_override(cfg, key, value)
        if isinstance(current, tuple) and isinstance(value, list):
            value = tuple(value)
        if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if current is not None and (not isinstance(value, type(current))
                                    or isinstance(value, bool) != isinstance(current, bool)):
            raise UsageError(f"--config.{key} expects {type(current).__name__} (like "
                             f"{current!r}), got {value!r}.")
        if value != current:
            section, _, leaf = key.rpartition(".")
            node = _get(cfg, section) if section else cfg
            with cfg.unlocked():
                node[leaf] = value
            if key not in changed:
                changed.append(key)
    return changed
