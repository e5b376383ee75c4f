"""Does this host's input pipeline keep up with the slice? (issue 17.3)

For each WORKLOAD:CONFIG, pulls batches from the workload's own train pipeline (the code a run
uses) on this host and prints host examples/s and bytes per example, next to the examples/s ONE
host must feed for the target slice to run at its roofline step time (`tpubench fit`'s lower
bound on step time), and their ratio, the headroom: >= 1, this host keeps up even at the
roofline; < 1, the input pipeline is the bottleneck before the chips are.

    JAX_PLATFORMS=cpu python benchmarks/input_pipeline.py resnet:mini ssd:mini \\
        [--topology=v4:2x2x1 --fit_json=resnet:mini=FIT.json ...] [--host_batch=256] \\
        [--batches=20] [--warmup=2] [--mock_tfds=512] [--config.KEY=VALUE ...]

- The roofline needs a `tpubench fit WORKLOAD --config=C --topology=T --json > FIT.json` report
  (`--fit_json=WORKLOAD:CONFIG=FIT.json`), or `--fit` to compile it here (minutes for a full
  config). Without `--topology`, only the host figures are printed.
- `--host_batch` sets the batch the pipeline is measured at (the config's global batch over the
  topology's hosts by default; full configs' batches are large, so a smaller one keeps memory
  small; the examples/s hardly depend on it, check with two values).
- `--mock_tfds=N`: tfds datasets that are not on this machine are replaced by N random examples
  of the same features (`tfds.testing.mock_data`): the decode and augmentation code is the real
  one, the images are noise. Say so when quoting the figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import sys
from unittest import mock

from tpubench import config as config_lib
from tpubench import registry
from tpubench.errors import UsageError
from tpubench.platform import input_rate, topology


def _mocked(n: int):
    if not n:
        return contextlib.nullcontext()
    import tensorflow_datasets as tfds

    stack = contextlib.ExitStack()
    stack.enter_context(tfds.testing.mock_data(num_examples=n))
    stack.enter_context(mock.patch.object(tfds.core.DatasetBuilder, "is_prepared",
                                          return_value=True))
    return stack


def measure(workload: str, config: str, overrides: list[str], host_batch: int, batches: int,
            warmup: int, mock_tfds: int) -> input_rate.HostRate:
    """One host's pipeline of WORKLOAD:CONFIG at `host_batch` examples per batch."""
    cfg = config_lib.load(workload, config, [f"--config.data.global_batch_size={host_batch}",
                                             *overrides])
    w = registry.create(cfg)
    with _mocked(mock_tfds):
        w.check_data()
        return input_rate.host_rate(w.train_batches(0, 0, 1), batches, warmup)


def fit_report(workload: str, config: str, overrides: list[str], topo: str,
               fit_json: str | None) -> dict:
    if fit_json:
        return json.loads(pathlib.Path(fit_json).read_text())
    from tpubench import fit

    return fit.fit(config_lib.load(workload, config, overrides), topo).as_dict()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", metavar="WORKLOAD:CONFIG")
    p.add_argument("--topology", default="", help="target slice, e.g. v4:2x2x1 (tpubench fit)")
    p.add_argument("--fit_json", action="append", default=[], metavar="WORKLOAD:CONFIG=FILE")
    p.add_argument("--fit", action="store_true", help="compile the fit report here (slow)")
    p.add_argument("--host_batch", type=int, default=0)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--mock_tfds", type=int, default=0)
    p.add_argument("--json", action="store_true", help="one JSON object per run")
    args, overrides = p.parse_known_args()
    bad = [o for o in overrides if not o.startswith("--config.")]
    if bad:
        p.error(f"unrecognized arguments: {' '.join(bad)}")
    fits = dict(f.split("=", 1) for f in args.fit_json)
    topo = topology.parse(args.topology) if args.topology else None
    failed = 0
    for run in args.runs:
        workload, _, config = run.partition(":")
        config = config or "mini"
        if workload not in registry.names():
            p.error(f"unknown workload {workload!r}; known: {', '.join(registry.names())}")
        cfg = config_lib.load(workload, config, overrides)
        hosts = topo.num_hosts if topo else 1
        host_batch = args.host_batch or max(1, int(cfg.data.global_batch_size) // hosts)
        try:
            rate = measure(workload, config, overrides, host_batch, args.batches, args.warmup,
                           args.mock_tfds)
        except UsageError as e:  # data not prepared or missing: say how to fix it, go on
            print(f"{workload}:{config}: {e}", file=sys.stderr)
            failed += 1
            continue
        row = {"run": f"{workload}:{config}", "host_batch": host_batch,
               "examples_per_s": rate.examples_per_s, "bytes_per_example": rate.bytes_per_example,
               "MB_per_s": rate.bytes_per_s / 1e6, "mock_tfds": args.mock_tfds or None}
        if topo and (args.fit or f"{workload}:{config}" in fits):
            report = fit_report(workload, config, overrides, args.topology,
                                fits.get(f"{workload}:{config}"))
            needed = input_rate.needed_rate(report, hosts)
            row.update(topology=args.topology, hosts=hosts,
                       global_batch_size=report["global_batch_size"],
                       roofline_step_s=report["roofline_step_s"], needed_per_host=needed,
                       headroom=input_rate.headroom(rate, needed))
        if args.json:
            print(json.dumps(row))
            continue
        line = (f"{row['run']:<22} host {rate.examples_per_s:>10,.1f} ex/s at batch {host_batch}"
                f" ({rate.bytes_per_example:,.0f} B/example, {row['MB_per_s']:,.1f} MB/s)")
        if "headroom" in row:
            line += (f" | {args.topology} roofline {row['roofline_step_s'] * 1e3:.2f} ms/step "
                     f"needs {row['needed_per_host']:,.0f} ex/s per host: headroom "
                     f"{row['headroom']:.2f}")
        print(line + (" [tfds mock data]" if args.mock_tfds else ""))
    sys.stdout.flush()
    if failed:
        sys.exit(2)


if __name__ == "__main__":
    main()
