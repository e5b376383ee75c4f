"""The test session itself: strict in CI, hermetic everywhere (tests/conftest.py)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import conftest
import pytest


@pytest.mark.parametrize(("value", "ci"), [
    ("true", True), ("TRUE", True), ("1", True), ("yes", True),
    ("false", False), ("False", False), ("0", False), ("no", False), ("", False), (None, False),
])
def test_ci_means_ci_only_when_it_says_so(value, ci):
    """Bites: `bool(os.environ.get("CI"))` (CI=false counted as CI)."""
    environ = {} if value is None else {"CI": value}
    assert conftest.in_ci(environ) is ci


def _outcome(fn) -> BaseException | None:
    try:
        fn()
    except BaseException as e:  # pytest's skip/fail outcomes are BaseExceptions
        return e
    return None


def test_a_missing_prerequisite_fails_in_ci_and_skips_elsewhere(monkeypatch):
    """Bites: missing() skipping in CI (the check this replaces skipped silently in CI)."""
    monkeypatch.setenv("CI", "true")
    outcome = _outcome(lambda: conftest.missing("libtpu is not installed"))
    assert type(outcome) is pytest.fail.Exception and "libtpu" in str(outcome)
    monkeypatch.setenv("CI", "false")
    outcome = _outcome(lambda: conftest.missing("libtpu is not installed"))
    assert type(outcome) is pytest.skip.Exception


def test_shared_data_needs_every_folder_the_tests_read(tmp_path):
    """Bites: shared_data_problem checking only that data/ exists."""
    data = tmp_path / "data"
    assert "is missing" in conftest.shared_data_problem(data)
    for folder in conftest.SHARED_DATA_FOLDERS:
        (data / folder).mkdir(parents=True)
        (data / folder / "f").write_text("x")
    assert conftest.shared_data_problem(data) is None
    (data / "fsdd" / "f").unlink()
    assert conftest.shared_data_problem(data).endswith("lacks (or has empty) fsdd")
    assert conftest.SHARED_DATA_FOLDERS == (
        "multi30k", "criteo_sample", "fsdd", "mlperf_v07_results")


def test_user_level_paths_point_into_the_session_dir(hermetic_dir):
    """tpubench's cache (`paths.cache_dir()`: the CPU peak, prepared data), XDG, matplotlib and
    tfds write into this session's directory, here and in child processes; nothing under
    ~/.cache/tpubench. Bites: conftest using setdefault (a user's own value would win)."""
    from tpubench import paths

    assert paths.cache_dir() == hermetic_dir / "tpubench_cache"
    for name, sub in conftest.HERMETIC_DIRS.items():
        assert pathlib.Path(os.environ[name]) == hermetic_dir / sub
    child = subprocess.run(
        [sys.executable, "-c", "from tpubench import paths; print(paths.cache_dir())"],
        capture_output=True, text=True, check=True, cwd=conftest.REPO)
    assert child.stdout.strip() == str(hermetic_dir / "tpubench_cache")
    assert "JAX_COMPILATION_CACHE_DIR" not in os.environ
    assert "TPUBENCH_DATA_DIR" not in os.environ


def test_cache_dir_is_the_variable_else_the_user_cache(monkeypatch, tmp_path):
    """One home for tpubench's cache: $TPUBENCH_CACHE_DIR, read at each call; unset or empty, the
    user's ~/.cache/tpubench. Bites: `environ.get(name, default)` (an empty value would give the
    current directory), or reading the variable once at import."""
    from tpubench import paths

    monkeypatch.setenv("TPUBENCH_CACHE_DIR", str(tmp_path / "c"))
    assert paths.cache_dir() == tmp_path / "c"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for value in ("", None):
        if value is None:
            monkeypatch.delenv("TPUBENCH_CACHE_DIR")
        else:
            monkeypatch.setenv("TPUBENCH_CACHE_DIR", value)
        assert paths.cache_dir() == tmp_path / "home" / ".cache" / "tpubench"


def test_the_users_own_cache_settings_do_not_leak_in(tmp_path):
    """A user who exported TPUBENCH_CACHE_DIR (or a JAX compilation cache) still gets a hermetic
    session. Bites: conftest using setdefault for the hermetic paths, or not dropping
    JAX_COMPILATION_CACHE_DIR."""
    user = {"TPUBENCH_CACHE_DIR": str(tmp_path / "user_cache"),
            "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "user_jax"),
            "XDG_CACHE_HOME": str(tmp_path / "user_xdg")}
    code = ("import os, conftest; print(os.environ['TPUBENCH_CACHE_DIR']); "
            "print(os.environ['XDG_CACHE_HOME']); "
            "print(os.environ.get('JAX_COMPILATION_CACHE_DIR'))")
    child = subprocess.run([sys.executable, "-c", code], env={**os.environ, **user},
                           cwd=pathlib.Path(conftest.__file__).parent, capture_output=True,
                           text=True, check=True)
    cache, xdg, jax_cache = child.stdout.split()
    assert "tpubench-tests-" in cache and cache.endswith("tpubench_cache")
    assert "tpubench-tests-" in xdg and jax_cache == "None"
    assert not (tmp_path / "user_cache").exists()
