"""The worker side of `cpu_gap.py`'s protocol, shared by its JAX workers and
`torch_resnet50.py` (plain Python: the torch worker's interpreter has no JAX)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable


def serve(step: Callable[[], float], info: dict) -> None:
    """Print `info` as the ready line, then per stdin line N run `step` N times and print the
    step times and the last loss as one JSON line."""
    print(json.dumps({"ready": True, **info}), flush=True)
    for line in sys.stdin:
        times, loss = [], None
        for _ in range(int(line)):
            t = time.perf_counter()
            loss = step()
            times.append(time.perf_counter() - t)
        print(json.dumps({"times": times, "loss": loss}), flush=True)
