"""Counting XLA compilations while LoadGen runs (there must be none after the warm-up).

JAX records `/jax/core/compile/backend_compile_duration` through `jax.monitoring` for every
backend compile (a `jit` cache miss, an AOT `.compile()`, an eager op seen for the first time),
from whatever thread compiles. `CompileCounter` listens for it between `__enter__` and `__exit__`.
"""

from __future__ import annotations

import threading

import jax.monitoring

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class CompileCounter:
    """Context manager: `count` = backend compiles seen while active (any thread)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()
        self._active = False

    def _listener(self, event: str, duration_secs: float, **kwargs) -> None:
        if self._active and event == BACKEND_COMPILE_EVENT:
            with self._lock:
                self.count += 1

    def __enter__(self) -> CompileCounter:
        self._active = True
        jax.monitoring.register_event_duration_secs_listener(self._listener)
        return self

    def __exit__(self, *exc) -> None:
        self._active = False
        jax.monitoring.unregister_event_duration_listener(self._listener)
