"""`tpubench prepare WORKLOAD --config=NAME [--config.KEY=VALUE ...]`: offline preprocessing.

Runs the workload's `prepare()` hook once, before the first run of a result: the vocabulary,
tokenized arrays and a manifest with counts are written where every later run reads them, so
all runs see the same data state and nothing is preprocessed on the clock of run 1 only. Use the
same config and overrides as the runs. Idempotent: a complete preparation is kept.
"""

from __future__ import annotations

import argparse
import json

from tpubench.errors import UsageError


def main(argv: list[str]) -> int:
    """Entry point of `tpubench prepare`; bad input is a `UsageError` (exit status 2)."""
    from tpubench import config as config_lib
    from tpubench import registry

    parser = argparse.ArgumentParser(
        prog="tpubench prepare",
        description="Prepare WORKLOAD's data for CONFIG (vocabulary, tokenized arrays, "
        "manifest). Extra --config.KEY=VALUE flags override keys, as for `tpubench run`.",
    )
    parser.add_argument("workload")
    parser.add_argument("--config", required=True, help="config name (mini, full, ...) or path")
    overrides, words = config_lib.split_overrides(argv)
    try:
        args, rest = parser.parse_known_args(words)
    except SystemExit as e:  # argparse exits on bad input; make it one paragraph instead
        if e.code == 0:
            return 0
        raise UsageError(
            "Usage: tpubench prepare WORKLOAD --config=NAME [--config.KEY=VALUE ...] "
            "(the same config and overrides as the runs that will use the data).") from None
    if rest:
        raise UsageError(
            f"tpubench prepare: unrecognized arguments {' '.join(rest)}; only "
            "--config.KEY=VALUE overrides may follow the workload and --config.")
    registry.workload_class(args.workload)  # unknown workload -> UsageError
    cfg = config_lib.load(args.workload, args.config, overrides)
    if not cfg.workload:
        cfg.workload = args.workload
    workload = registry.create(cfg)
    workload.prepare()
    print(json.dumps({"workload": args.workload, "config": cfg.get("config_name", args.config),
                      "prepared": True}))
    return 0
