"""Shared test setup: CPU only, one device in this process (multi-device tests use subprocesses),
and the read-only shared data directory that CI places beside the checkout."""

import os
import pathlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent


def _shared_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("TPUBENCH_SHARED_DIR", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_data_dir() -> pathlib.Path:
    """`../shared/data`: in CI (CI=true) a missing directory FAILS the test; on a user's machine,
    where it does not exist, the test is skipped with the reason printed (pytest -rs)."""
    path = _shared_dir() / "data"
    if not path.is_dir():
        message = f"shared data directory {path} is missing (set TPUBENCH_SHARED_DIR)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    """The checkout's root (for running entry points as a user would)."""
    return REPO
