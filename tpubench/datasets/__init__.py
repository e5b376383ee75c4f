"""Dataset readers shared by workloads."""
