"""MobileBERT's model keys (`model.arch = "mobilebert"`): the published config
`uncased_L-24_H-128_B-512_A-4_F-4_OPT` (workloads/bert/mobilebert.py `MOBILEBERT_OPT`)."""

from __future__ import annotations

import ml_collections

from workloads.bert.mobilebert import MOBILEBERT_OPT


def use_mobilebert(c: ml_collections.ConfigDict, **sizes: object) -> ml_collections.ConfigDict:
    """`c` (a SQuAD config) with the MobileBERT encoder at the published sizes, or at `sizes`
    where given (a mini or smoke model). Keys BERT's encoder does not have are added."""
    c.model.arch = "mobilebert"
    c.model.update({k: v for k, v in MOBILEBERT_OPT.items() if k in c.model})
    for key, value in MOBILEBERT_OPT.items():
        if key not in c.model:
            c.model[key] = value
    c.model.update(sizes)
    return c
