"""`tpubench prepare WORKLOAD --config=NAME [--config.KEY=VALUE ...]`: offline preprocessing.

Runs the workload's `prepare()` hook once, before the first run of a result: the vocabulary,
tokenized arrays and a manifest with counts are written where every later run reads them, so
all runs see the same data state and nothing is preprocessed on the clock of run 1 only. Use the
same config and overrides as the runs. Idempotent: a complete preparation is kept.
"""

from __future__ import annotations

import json
import os

from tpubench.errors import UsageError


def main(argv: list[str]) -> int:
    """Entry point of `tpubench prepare`; bad input is a `UsageError` (exit status 2)."""
    from tpubench import config as config_lib
    from tpubench import helptext, registry

    parser = helptext.Parser(
        prog="tpubench prepare",
        usage="tpubench prepare WORKLOAD --config=CONFIG [--config.KEY=VALUE ...]",
        description=helptext.paragraph(
            "Prepare WORKLOAD's data for CONFIG once, before its runs (vocabulary, tokenized "
            "arrays, a manifest with counts), and print the directory it is in. Pass the same "
            "config and --config.KEY=VALUE overrides as the runs that will read it; a complete "
            "preparation is kept. Workloads without a preparation step have nothing to do."),
        epilog=helptext.epilog("tpubench prepare transformer --config=mini",
                               "tpubench prepare gnmt --config=full "
                               "--config.data.dir=/data/wmt16"))
    parser.add_argument("workload", help="a workload name (listed below)")
    parser.add_argument("--config", required=True, help="config name (mini, full, ...) or path")
    overrides, words = config_lib.split_overrides(argv)
    args, rest = parser.parse_known_args(words)
    if rest:
        raise UsageError(
            f"tpubench prepare: unrecognized arguments {' '.join(rest)}; only "
            "--config.KEY=VALUE overrides may follow the workload and --config.")
    registry.workload_class(args.workload)  # unknown workload -> UsageError
    cfg = config_lib.load(args.workload, args.config, overrides)
    if not cfg.workload:
        cfg.workload = args.workload
    workload = registry.create(cfg)
    where = workload.prepare()
    name = f"{args.workload} {cfg.get('config_name', args.config)}"
    if where is None:
        print(f"tpubench prepare: {name} (data.source={cfg.data.source}) has nothing to prepare; "
              "its runs read the data as they are.")
    else:
        print(f"tpubench prepare: {name}'s prepared data is in {os.fspath(where)} (kept if it "
              "was complete already; every run of this config reads it from there).")
    print(json.dumps({"workload": args.workload, "config": cfg.get("config_name", args.config),
                      "prepared": True, "directory": None if where is None else os.fspath(where)}))
    return 0
