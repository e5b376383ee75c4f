"""A sign of life while the host waits on one long call it cannot watch (an XLA compile).

    with heartbeat("[resnet/full] init: compiling"):
        compiled = engine.compile(...)

prints "[resnet/full] init: compiling ... 20 s", "... 40 s", ... every `every_s` seconds from a
background thread until the block ends, then nothing more. The thread only sleeps and prints: it
touches no device and no JAX state, so it cannot change what the call computes or how long it
takes (beyond a print every few seconds). A call that ends before the first interval prints
nothing.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

DEFAULT_EVERY_S = 20.0  # read at each call (a test may shorten it)


@contextlib.contextmanager
def heartbeat(what: str, every_s: float | None = None, stream: TextIO | None = None,
              enabled: bool = True) -> Iterator[None]:
    """Print "`what` ... N s" every `every_s` seconds (default `DEFAULT_EVERY_S`) while the
    `with` block runs (to `stream`, default stdout; nothing when not `enabled`, e.g. on every
    process but 0)."""
    every_s = DEFAULT_EVERY_S if every_s is None else float(every_s)
    if not enabled or every_s <= 0:
        yield
        return
    out = stream if stream is not None else sys.stdout
    done = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        # Event.wait returns True once the block has ended: the last beat never follows it.
        while not done.wait(every_s):
            print(f"{what} ... {time.monotonic() - start:.0f} s", file=out, flush=True)

    thread = threading.Thread(target=beat, name="tpubench-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
