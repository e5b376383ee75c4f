"""JAX's persistent compilation cache: a second run of the same config skips XLA compile.

Every entry point (`tpubench run`, `tpubench infer`, `python -m workloads.<name>.main`) calls
`enable(config)` once, after parsing the config and before the first compile. From then on every
XLA compile of the process (the AOT `.lower(...).compile()` of the train blocks and eval step,
the state init, eager ops) first looks in the cache directory; a hit loads the executable instead
of compiling it, a miss compiles and writes it. What gets shorter is the init (untimed; for a
resumed run, the re-initialisation on the clock): the cache is read only where compiles happen,
and nothing compiles between `run_start` and `run_stop` (docs/timing.md). The library API
(`train.train_and_evaluate`, the notebook) leaves JAX's settings alone: call
`compile_cache.enable(cfg)` first to get the same cache there.

Config keys (`tpubench.config.base_config`):

- `compile_cache` (default True; False when TPUBENCH_COMPILE_CACHE=0): False turns the cache off
  for the process (nothing is read or written, even where JAX_COMPILATION_CACHE_DIR is set).
- `compile_cache_dir` (default ""): where the cache lives. "" means JAX_COMPILATION_CACHE_DIR when
  the user exported it, else `<tpubench cache home>/jax_compilation_cache`, the home being
  $TPUBENCH_CACHE_DIR or ~/.cache/tpubench (the same home as the CPU peak and the tokenizer).

Every executable is cached, however small or fast to compile (JAX's defaults skip those under
1 s of compile time, which is every executable of the minis on a CPU). Entries are keyed by the
computation, the devices, the compile options and the jax/jaxlib version, so a changed config,
model or library compiles afresh. Multi-process runs: only process 0 writes (JAX's rule), every
process reads. The cache is trusted code: do not point it at a directory others can write.
"""

from __future__ import annotations

import os
import pathlib
import sys
from typing import Any

from tpubench import paths
from tpubench.errors import UsageError

CACHE_HOME_ENV = paths.CACHE_ENV
JAX_ENV = "JAX_COMPILATION_CACHE_DIR"
SUBDIR = "jax_compilation_cache"


def default_dir() -> pathlib.Path:
    """Where the cache lives when the config says nothing: JAX's own variable, else the home's."""
    return pathlib.Path(os.environ.get(JAX_ENV) or paths.cache_dir() / SUBDIR)


def _requested(config_or_dir: Any) -> tuple[bool, str]:
    """(on, the directory asked for: "" = the default) from a config, a directory or None."""
    if config_or_dir is None:
        return True, ""
    if isinstance(config_or_dir, (str, os.PathLike)):
        return True, os.fspath(config_or_dir)
    get = getattr(config_or_dir, "get", None)
    if get is None:
        raise TypeError(f"enable() takes a config, a directory or None, not {config_or_dir!r}")
    run = get("run", None)  # a config: its run section
    if run is not None:
        get = run.get
    return bool(get("compile_cache", True)), str(get("compile_cache_dir", "") or "")


def resolve(config_or_dir: Any = None) -> pathlib.Path | None:
    """The cache directory `config_or_dir` asks for, or None when it turns the cache off.

    A config (its `run.compile_cache` / `run.compile_cache_dir`; or a mapping with those two
    keys, in a `run` mapping or not), a directory
    (str or path; "" = the default), or None (the default)."""
    on, asked = _requested(config_or_dir)
    if not on:
        return None
    return pathlib.Path(asked) if asked else default_dir()


def _problem(path: pathlib.Path) -> str | None:
    """Why `path` cannot hold the cache (a file, or not creatable/writable), or None."""
    if path.exists():
        if not path.is_dir():
            return f"{path} is a file, not a directory"
        return None if os.access(path, os.W_OK | os.X_OK) else f"{path} is not writable"
    parent = next((p for p in path.absolute().parents if p.exists()), pathlib.Path("/"))
    if not parent.is_dir():
        return f"{parent} is a file"
    return None if os.access(parent, os.W_OK | os.X_OK) else f"{parent} is not writable"


def enable(config_or_dir: Any = None) -> pathlib.Path | None:
    """Point JAX's persistent compilation cache at the directory `config_or_dir` asks for (see
    `resolve`), or turn it off; returns the directory, or None when off.

    Call once per process before the first compile (a later call also works: it resets JAX's
    cache state). An explicit `compile_cache_dir` that cannot hold the cache is a `UsageError`
    (nothing is created); an unusable default (say, a read-only home) only turns the cache off,
    with a note on stderr, since the run itself does not need it."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache as jax_cc

    path = resolve(config_or_dir)
    explicit = bool(_requested(config_or_dir)[1])
    if path is not None:
        problem = _problem(path)
        if problem and explicit:
            raise UsageError(
                f"--config.run.compile_cache_dir={os.fspath(path)!r} cannot hold the compilation "
                f"cache: {problem}. Pass a directory you can write to (it is created if "
                "missing), leave it empty for the default, or turn the cache off with "
                "--config.run.compile_cache=false.")
        if problem:
            print(f"tpubench: note: no compilation cache ({problem}); set {CACHE_HOME_ENV} or "
                  "--config.run.compile_cache_dir to a writable directory to have one.",
                  file=sys.stderr)
            path = None
    jax_cc.reset_cache()  # JAX initialises the cache once, at its first compile
    if path is None:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", os.fspath(path))
    # Cache everything: the minis' executables compile in well under JAX's 1 s default, and -1
    # lifts the entry-size floor (0 would let JAX substitute its own default).
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return path
