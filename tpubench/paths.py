"""Where tpubench keeps files of its own outside a run's workdir: one home, one function.

`cache_dir()` is `$TPUBENCH_CACHE_DIR` when set (and not empty), else `~/.cache/tpubench`. It is
read at each call, so tests (tests/conftest.py) and users can point it elsewhere at any time.
What lives there: the measured CPU peak (`tpubench.platform.perf`), JAX's persistent compilation
cache (`tpubench.platform.compile_cache`), the translation workloads' prepared data
(`tpubench/datasets/prepared_text.py`, unless `--config.data.cache_dir` says otherwise).
"""

from __future__ import annotations

import os
import pathlib

CACHE_ENV = "TPUBENCH_CACHE_DIR"


def cache_dir() -> pathlib.Path:
    """`$TPUBENCH_CACHE_DIR`, or `~/.cache/tpubench` when it is unset or empty."""
    return pathlib.Path(os.environ.get(CACHE_ENV) or pathlib.Path.home() / ".cache" / "tpubench")
