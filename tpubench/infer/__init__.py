"""MLPerf Inference under the official LoadGen: a QSL over a workload's eval data, a SUT that
batches queries into pre-compiled buckets, all four scenarios, performance and accuracy modes.

Modules: `spec` (what a workload declares), `settings` (explicit LoadGen settings per
profile), `qsl`, `sut`, `logs` (LoadGen's output), `runner` (one run, the Server search),
`cli` (`tpubench infer`).
"""
