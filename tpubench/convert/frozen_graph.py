"""The constants of a TF frozen graph (.pb), read without TensorFlow, or an .npz of the same.

A frozen graph keeps each variable's value on a `Const` node named as the variable; the GraphDef
is parsed with TensorBoard's copy of the TF protos. Used by the converters of the published
SSD-MobileNet, MobileNetEdgeTPU and DeepLabv3+ weights.
"""

from __future__ import annotations

import os

import numpy as np

from tpubench.errors import UsageError


def read_frozen_graph(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """name -> array of every `Const` node of a TF frozen graph (.pb), or of an .npz;
    UsageError when the file is missing or is neither."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UsageError(f"The weights file {path!r} (a TF frozen graph .pb, or an .npz of its "
                         "constants' names) does not exist.")
    if path.endswith(".npz"):
        with np.load(path) as f:
            return {k: f[k] for k in f.files}
    from tensorboard.compat.proto import graph_pb2
    from tensorboard.util import tensor_util

    graph = graph_pb2.GraphDef()
    with open(path, "rb") as f:
        try:
            graph.ParseFromString(f.read())
        except Exception as e:  # protobuf's DecodeError
            raise UsageError(f"{path!r} is not a TF frozen graph (GraphDef .pb) nor an .npz: "
                             f"{e}") from e
    return {n.name: tensor_util.make_ndarray(n.attr["value"].tensor)
            for n in graph.node if n.op == "Const"}
