"""Flush the OS page cache before a run, when this process is allowed to.

MLPerf v0.7 training rules, "Data State at Start of Run": "You must flush the cache or restart
the system prior to benchmarking." The log's `cache_clear` says whether it was done: True only
when `sync` and the write to `/proc/sys/vm/drop_caches` succeeded (root on a host, or a
privileged container); otherwise False, and the run says so.
"""

from __future__ import annotations

import os

DROP_CACHES = "/proc/sys/vm/drop_caches"


def drop(path: str = DROP_CACHES) -> bool:
    """`sync`, then ask the kernel to drop the page cache, dentries and inodes ("3").
    Returns whether the kernel took the request. Where `path` cannot be opened for writing (not
    root, a read-only /proc in a container) nothing is synced: the sync only serves the drop,
    and on a busy disk it cost up to ~0.8 s of every run's init (issue 10.7)."""
    try:
        with open(path, "w") as f:
            os.sync()
            f.write("3\n")
    except OSError:
        return False
    return True
