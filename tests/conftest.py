"""Shared test setup: CPU only, one device in this process (multi-device tests use subprocesses),
a hermetic environment, and the read-only shared data directory that CI places beside the
checkout.

Hermetic: before anything imports tpubench, every user-level path the code or its libraries write
to points into one temporary directory for this session (removed at exit), and environment
variables that would change what a test computes are dropped. Child processes inherit it.

CI (`CI` set to 1/true/yes, any case; `CI=false` is not CI) is strict: a missing shared data
folder or a missing libtpu FAILS the tests that need them; elsewhere they are skipped with the
reason printed (pytest -rs).
"""

import atexit
import importlib.util
import os
import pathlib
import shutil
import tempfile

# Under pytest-xdist (`pytest -n 2`), the workers share the controller's session directory, and
# with it one compilation cache: the controller imports this file first and its environment is
# inherited by the workers it starts; only the process that made the directory removes it.
_INHERITED = os.environ.get("TPUBENCH_TEST_SESSION_DIR") if os.environ.get(
    "PYTEST_XDIST_WORKER") else None
if _INHERITED and pathlib.Path(_INHERITED).is_dir():
    _SESSION_DIR = pathlib.Path(_INHERITED)
else:
    _SESSION_DIR = pathlib.Path(tempfile.mkdtemp(prefix="tpubench-tests-"))
    atexit.register(shutil.rmtree, _SESSION_DIR, ignore_errors=True)
    os.environ["TPUBENCH_TEST_SESSION_DIR"] = str(_SESSION_DIR)

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Runs in tests do not flush the machine's page cache (CI runs as root, where they could); the
# flush itself is tested in tests/test_timing.py.
os.environ["TPUBENCH_CLEAR_PAGE_CACHE"] = "0"
# User-level caches and configs: tpubench's own (perf.py's CPU peak, the tokenizer cache),
# XDG (matplotlib and others follow it), matplotlib's, and the tfds download/prepare directory.
HERMETIC_DIRS = {
    "TPUBENCH_CACHE_DIR": "tpubench_cache",
    "XDG_CACHE_HOME": "xdg_cache",
    "XDG_CONFIG_HOME": "xdg_config",
    "XDG_DATA_HOME": "xdg_data",
    "MPLCONFIGDIR": "matplotlib",
    "TFDS_DATA_DIR": "tensorflow_datasets",
}
for _name, _sub in HERMETIC_DIRS.items():
    (_SESSION_DIR / _sub).mkdir(exist_ok=True)
    os.environ[_name] = str(_SESSION_DIR / _sub)
# Settings from the user's shell that would change a test's result or write outside the session:
# the default data_dir of every config, a persistent JAX compilation cache, a cluster to join.
for _name in ("TPUBENCH_DATA_DIR", "JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE",
              "TPUBENCH_COORDINATOR", "TPUBENCH_NUM_PROCESSES", "TPUBENCH_PROCESS_ID"):
    os.environ.pop(_name, None)
# JAX's persistent compilation cache (tpubench/platform/compile_cache.py): one for the session,
# under TPUBENCH_CACHE_DIR above, shared by this process and every child, so an executable compiled
# by one test is loaded by the next. TPUBENCH_TEST_COMPILE_CACHE=0 runs the session without it.
# Measured: tests/test_cli.py + test_timing.py (41 tests), both ways at once on the loaded 2-core
# machine: 1,888 s with it, 2,285 s without.
COMPILE_CACHE = os.environ.pop("TPUBENCH_TEST_COMPILE_CACHE", "1") != "0"
os.environ["TPUBENCH_COMPILE_CACHE"] = "1" if COMPILE_CACHE else "0"

import pytest  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
# The shared data folders the tests read (tests/…: multi30k transformer, criteo_sample dlrm,
# fsdd the speech data, mlperf_v07_results the report tests).
SHARED_DATA_FOLDERS = ("multi30k", "criteo_sample", "fsdd", "mlperf_v07_results")


def in_ci(environ=None) -> bool:
    """True when `CI` says so: 1, true or yes (any case). Unset, empty, 0, false, no: not CI."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() in ("1", "true", "yes")


def missing(message: str) -> None:
    """A test's prerequisite is missing: fail in CI, skip (with the reason) elsewhere."""
    if in_ci():
        pytest.fail(f"{message} (CI is set: CI runs every test)", pytrace=False)
    pytest.skip(message)


def _shared_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("TPUBENCH_SHARED_DIR", REPO.parent / "shared"))


def shared_data_problem(data: pathlib.Path) -> str | None:
    """Why `data` is not a usable shared data directory, or None."""
    if not data.is_dir():
        return f"shared data directory {data} is missing (set TPUBENCH_SHARED_DIR)"
    absent = [f for f in SHARED_DATA_FOLDERS
              if not (data / f).is_dir() or not any((data / f).iterdir())]
    if absent:
        return f"shared data directory {data} lacks (or has empty) {', '.join(absent)}"
    return None


@pytest.fixture(scope="session", autouse=True)
def session_compile_cache() -> pathlib.Path | None:
    """This process's compiles use the session's cache too (None: the session runs without)."""
    from tpubench.platform import compile_cache

    return compile_cache.enable(None if COMPILE_CACHE else {"run": {"compile_cache": False}})


@pytest.fixture(scope="session")
def shared_data_dir() -> pathlib.Path:
    """`../shared/data` with every folder the tests read; in CI a missing one FAILS the test."""
    path = _shared_dir() / "data"
    problem = shared_data_problem(path)
    if problem:
        missing(problem)
    return path


def has_libtpu() -> bool:
    """True when the optional `libtpu` package (extra `tpu`) is importable."""
    return importlib.util.find_spec("libtpu") is not None


@pytest.fixture(scope="session")
def libtpu() -> None:
    """For tests that need libtpu (`tpubench fit` on TPU topologies): in CI its absence FAILS
    the test; elsewhere the test is skipped with how to install it."""
    if not has_libtpu():
        missing("libtpu is not installed (pip install 'tpubench[tpu]')")


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    """The checkout's root (for running entry points as a user would)."""
    return REPO


@pytest.fixture(scope="session")
def hermetic_dir() -> pathlib.Path:
    """This session's directory for user-level caches (see the module docstring)."""
    return _SESSION_DIR


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--extended", action="store_true", default=False,
        help="also run the tests marked `extended` (further seeds and variants of the minis' "
             "runs to target; ~30 min more on 2 cores)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`extended` tests run only with --extended: the default run keeps one seed of each
    mini-to-target test, so that the suite fits ~25 minutes on 2 cores (CI runs the default)."""
    if config.getoption("--extended"):
        return
    skip = pytest.mark.skip(reason="extended: run with --extended")
    for item in items:
        if "extended" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _sigterm_handler_restored():
    """Tests that call an entry point in this process (`cli.main`, `entry.run`) install
    tpubench's SIGTERM and SIGINT handler (tpubench.loops.preemption), which ignores both after
    a run: restore the previous handlers after each test, so that `kill` and Ctrl-C still end a
    pytest session."""
    import signal

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)
