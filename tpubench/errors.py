"""The one exception type users see for bad input: raised before any compute, printed as-is."""


class UsageError(ValueError):
    """Bad input (unknown workload/config/key, bad mesh, missing data). The message says how to
    fix it; `tpubench` prints it without a traceback and exits with status 2."""
