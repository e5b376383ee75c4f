"""Launchers: local processes, Cloud TPU VMs, SLURM, plain multi-node."""
