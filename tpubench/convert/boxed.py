"""Named arrays into a param tree whose leaves may be boxed (`nn.Partitioned`), for the
converters: a leaf's shape, a value put in its place, and a `Loader` that collects every name
that is missing or misshapen so that a converter reports them all at once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


def shape(x: Any) -> tuple[int, ...]:
    """The shape of `x`, a plain or abstract array or an `nn.Partitioned` box (its `.value`)."""
    return tuple(getattr(x, "value", x).shape)


def put(x: Any, value: Any) -> Any:
    """`value` in place of `x`: inside `x`'s box (same logical axes) when `x` is boxed."""
    return x.replace_boxed(value) if hasattr(x, "replace_boxed") else value


class Loader:
    """Takes arrays by name from `state` into leaves shaped like a model's, collecting what does
    not fit (`missing` names; `wrong`: "name (its shape in the file)") instead of failing on the
    first."""

    def __init__(self, state: Mapping[str, Any]):
        self.state, self.missing, self.wrong = state, [], []

    def take(self, name: str, like: Any,
             transform: Callable[[np.ndarray], np.ndarray] = lambda a: a,
             optional: Any = None) -> Any:
        """`state[name]` (float32, through `transform`) in place of `like`; `like` itself, noted,
        when the name is absent or the shape differs; `optional` (broadcast) fills an absent
        name instead when given."""
        if name not in self.state:
            if optional is not None:
                return put(like, np.broadcast_to(optional, shape(like)).astype(np.float32))
            self.missing.append(name)
            return like
        value = transform(np.asarray(self.state[name], np.float32))
        if tuple(value.shape) != shape(like):
            self.wrong.append(f"{name} {tuple(np.shape(self.state[name]))}")
            return like
        return put(like, value)

    def problems(self) -> str:
        """What did not fit, the first five of each kind: "missing ...; wrong shapes: ...; "
        (empty when everything fit)."""
        m, w = self.missing, self.wrong
        return ((f"missing {', '.join(m[:5])}{' ...' if len(m) > 5 else ''}; " if m else "")
                + (f"wrong shapes: {', '.join(w[:5])}; " if w else ""))
