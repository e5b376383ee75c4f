"""JAX's persistent compilation cache (tpubench/platform/compile_cache.py): on by default at every
entry point, a second run of the same config compiles nothing new, off with
--config.run.compile_cache=false.

Each test names its own cache directory (under tmp_path), so nothing is shared with the rest of
the session and nothing is written outside it.
"""

from __future__ import annotations

import os
import pathlib

import pytest
import runs

from tpubench import cli
from tpubench import config as config_lib
from tpubench.platform import compile_cache

# The ResNet smoke config: one synthetic train step and one eval step (a few executables).
SMOKE = ("resnet", "--config=smoke")
ON = {"TPUBENCH_COMPILE_CACHE": "1"}  # the default, whatever the session runs with (conftest)


def _entries(cache: pathlib.Path) -> dict[str, int]:
    """Cache entry name -> its mtime_ns (JAX writes one `<module>-<key>-cache` file each)."""
    return {p.name: p.stat().st_mtime_ns for p in cache.glob("*-cache")} if cache.is_dir() else {}


def test_a_second_run_of_the_same_config_compiles_nothing_new(tmp_path):
    """`tpubench run` with the default cache (under $TPUBENCH_CACHE_DIR): the first run writes
    the train step, eval step and state init; a second run in a fresh process of the same config
    finds every executable there and writes nothing (no new entry, none rewritten).
    Bites: the `compile_cache.enable(cfg)` line removed from `tpubench run` (nothing written;
    tried)."""
    home = tmp_path / "home"
    cache = home / compile_cache.SUBDIR
    for i in (1, 2):
        proc = runs.tpubench("run", *SMOKE, f"--workdir={tmp_path / f'run{i}'}",
                             TPUBENCH_CACHE_DIR=str(home), **ON)
        assert proc.returncode == 1, proc.stderr[-3000:]  # the smoke config ends "aborted"
        assert runs.summary(tmp_path / f"run{i}")["steps"] == 1
        if i == 1:
            first = _entries(cache)
            names = " ".join(first)
            assert len(first) >= 3, names
            assert "jit_dispatch-" in names and "jit_eval_step-" in names, names
    assert _entries(cache) == first  # same names, same mtimes: nothing compiled and written


def test_the_off_switch_writes_nothing(tmp_path):
    """--config.run.compile_cache=false: no cache anywhere, neither the named directory, nor the
    default under $TPUBENCH_CACHE_DIR, nor a JAX_COMPILATION_CACHE_DIR the user exported. The
    same run with the cache on writes there (JAX's variable wins over the tpubench default).
    Bites: resolve() ignoring compile_cache=False (the named directory filled; tried)."""
    named, home, jax_env = tmp_path / "named", tmp_path / "home", tmp_path / "jax_env"
    env = {"TPUBENCH_CACHE_DIR": str(home), "JAX_COMPILATION_CACHE_DIR": str(jax_env), **ON}
    proc = runs.tpubench("run", *SMOKE, f"--workdir={tmp_path / 'off'}",
                         "--config.run.compile_cache=false",
                         f"--config.run.compile_cache_dir={named}",
                         **env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert runs.summary(tmp_path / "off")["steps"] == 1
    assert not named.exists() and not (home / compile_cache.SUBDIR).exists()
    assert not jax_env.exists()
    # The control: on (the default), the user's JAX_COMPILATION_CACHE_DIR is the default dir.
    proc = runs.tpubench("run", *SMOKE, f"--workdir={tmp_path / 'on'}", **env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert _entries(jax_env) and not (home / compile_cache.SUBDIR).exists()


@pytest.mark.parametrize("entry", ["absl_main", "infer"])
def test_every_entry_point_enables_the_cache(tmp_path, entry):
    """The absl main and `tpubench infer` fill --config.run.compile_cache_dir too (`tpubench run` is
    the first test). Bites: the enable line removed from entry.main (absl_main: no entry;
    tried) or from infer.cli.run (infer: no entry; tried)."""
    cache = tmp_path / "cache"
    if entry == "absl_main":
        proc = runs.run_main("resnet", "smoke", tmp_path / "run",
                             f"--config.run.compile_cache_dir={cache}", **ON)
        assert proc.returncode == 1, proc.stderr[-3000:]
    else:
        proc = runs.tpubench("infer", "resnet", "--config=mini", "--scenario=SingleStream",
                             "--batch-sizes=1",
                             f"--workdir={tmp_path / 'infer'}",
                             f"--config.run.compile_cache_dir={cache}", **ON)
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        assert (tmp_path / "infer" / "summary.json").exists()
    assert _entries(cache)


def test_resolve_the_directory(tmp_path, monkeypatch):
    """Where the cache goes: the config's compile_cache_dir, else JAX_COMPILATION_CACHE_DIR,
    else <$TPUBENCH_CACHE_DIR or ~/.cache/tpubench>/jax_compilation_cache; off -> None.
    Bites: default_dir ignoring JAX_COMPILATION_CACHE_DIR, or "" read as the current directory
    (tried)."""
    monkeypatch.setenv("TPUBENCH_CACHE_DIR", str(tmp_path / "home"))
    monkeypatch.setenv("TPUBENCH_COMPILE_CACHE", "1")
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    cfg = config_lib.load("resnet", "smoke")
    assert compile_cache.resolve(cfg) == tmp_path / "home" / "jax_compilation_cache"
    assert compile_cache.resolve("") == compile_cache.resolve(None) == compile_cache.resolve(cfg)
    assert compile_cache.resolve(str(tmp_path / "x")) == tmp_path / "x"
    cfg.run.compile_cache_dir = str(tmp_path / "mine")
    assert compile_cache.resolve(cfg) == tmp_path / "mine"
    cfg.run.compile_cache = False
    assert compile_cache.resolve(cfg) is None
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax"))
    assert compile_cache.resolve(config_lib.load("resnet", "smoke")) == tmp_path / "jax"
    monkeypatch.setenv("TPUBENCH_CACHE_DIR", "")
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")
    assert compile_cache.resolve(None) == (
        pathlib.Path.home() / ".cache" / "tpubench" / "jax_compilation_cache")
    monkeypatch.setenv("TPUBENCH_COMPILE_CACHE", "0")
    assert compile_cache.resolve(config_lib.load("resnet", "smoke")) is None


def test_an_unusable_cache_dir_is_a_usage_error(tmp_path, capsys):
    """--config.run.compile_cache_dir that is a file: one paragraph, exit 2, nothing written (the
    workdir is not created). Bites: enable() without the UsageError for an explicit directory
    (a note, no cache, and the run goes on: exit 1, workdir written; tried)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    code = cli.main(["run", *SMOKE, f"--workdir={tmp_path / 'run'}",
                     f"--config.run.compile_cache_dir={afile / 'cache'}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "compile_cache_dir" in err and "is a file" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_cache_settings_keep_an_mlperf_config_closed():
    """The cache changes no computed value: overriding it leaves the full config closed
    division. Bites: the keys missing from division.HARNESS (open, with reasons; tried)."""
    cfg = config_lib.load("resnet", "full", ["--config.run.compile_cache=false",
                                             f"--config.run.compile_cache_dir={os.sep}tmp{os.sep}c"])
    assert cfg.is_mlperf is True and tuple(cfg.submission.open_reasons) == ()
    assert cfg.run.compile_cache is False
