"""Results: MLPerf Training v0.7 scoring, compliance verdicts, tables, plots and comparisons.

`tpubench report RESULTS_DIR` (see `tpubench.report.cli`). One concern per module:
`targets` (v0.7 targets, run counts), `logs` (runs from :::MLLOG logs and our workdirs),
`scoring` (olympic mean), `compliance` (the official checker, cached), `tree` (finding runs on
disk), `tables` (Markdown/JSON), `runs` (one row per run workdir: status, examples/s, MFU,
compliance, why not MLPerf), `curves` (loss and throughput from metrics.jsonl), `plots` (PNG),
`compare` (against published results), `profiles` (AlgoPerf-style performance profiles and
geometric-mean speedups).
"""
