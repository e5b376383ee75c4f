"""The Transformer's training feed: batches of the packed rows that `tpubench prepare` wrote.

A "sample" is a packed row (pairs packed greedily, once, by
`tpubench/datasets/prepared_text.py`), as in Google's v0.7 JAX submission; an epoch is every row
once, in an order shuffled by (seed, epoch). Batches are a pure function of (seed, step).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import ml_collections
import numpy as np

from tpubench.datasets.translation import Pairs, build_packed
from tpubench.errors import UsageError


def train_batches(
    pairs: Pairs, rows: Sequence[np.ndarray], config: ml_collections.ConfigDict,
    start_step: int, process_index: int, process_count: int,
) -> Iterator[dict[str, np.ndarray]]:
    """This process's slice of every global batch from `start_step` on: each epoch visits the
    prepared rows in an order shuffled by (seed, epoch); its last partial batch is dropped."""
    c = config
    gbs, local = c.data.global_batch_size, c.data.global_batch_size // process_count
    n_batches = len(rows) // gbs
    if n_batches == 0:
        raise UsageError(
            f"An epoch packs into {len(rows)} rows, fewer than global_batch_size={gbs}.")
    epoch, first_batch = divmod(start_step, n_batches)
    while True:
        order = np.random.default_rng([c.run.seed, epoch]).permutation(len(rows))
        for b in range(first_batch, n_batches):
            first = b * gbs + process_index * local
            picked = [rows[i].tolist() for i in order[first : first + local]]
            yield build_packed(pairs, picked, c.data.max_len)
        epoch, first_batch = epoch + 1, 0
