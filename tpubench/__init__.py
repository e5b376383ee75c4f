"""tpubench: MLPerf Training/Inference v0.7 benchmarks in JAX (see README.md).

Importing tpubench keeps JAX off libtpu on a host without a TPU (`tpubench.platform.host`).
"""

from tpubench.platform import host as _host

_host.select_platforms()
