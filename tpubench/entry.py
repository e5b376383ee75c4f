"""The absl entry point every `workloads/<name>/main.py` uses (Flax-example shape).

    python -m workloads.resnet.main --config=workloads/resnet/configs/mini.py --workdir=DIR \\
        [--config.KEY=VALUE ...]
"""

from __future__ import annotations

import pathlib
import sys

from absl import app, flags, logging
from ml_collections import config_flags

from tpubench import preemption
from tpubench.errors import UsageError


def run(workload_name: str) -> None:
    """Parse `--config`, `--workdir` and overrides, then train to target; never returns."""
    preemption.install()  # first: SIGTERM at any moment is handled (tpubench.preemption)
    flags.DEFINE_string("workdir", None, "Run directory (log, summary, checkpoints).")
    config_flags.DEFINE_config_file("config", None, "Path to a config file.", lock_config=True)
    flags.mark_flags_as_required(["config", "workdir"])

    def main(argv: list[str]) -> None:
        if len(argv) > 1:
            raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
        from tpubench import distributed, train

        logging.set_verbosity(logging.WARNING)  # orbax/absl INFO chatter; progress is printed
        config = flags.FLAGS.config
        path = config_flags.get_config_filename(flags.FLAGS["config"])
        with config.unlocked():
            config.workload = config.workload or workload_name
            config.config_name = config.config_name or pathlib.Path(path).stem
        try:
            distributed.initialize_from_env()  # before any JAX computation; no-op alone
            summary = train.train_and_evaluate(config, flags.FLAGS.workdir)
        except UsageError as e:
            print(f"tpubench: error: {e}", file=sys.stderr)
            sys.exit(2)
        sys.exit(0 if summary["status"] in ("success", "preempted") else 1)

    try:
        app.run(main)
    except preemption.PreemptedBeforeRun as e:
        print(f"tpubench: {e}", file=sys.stderr)
        sys.exit(0)
