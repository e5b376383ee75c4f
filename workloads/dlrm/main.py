"""`python -m workloads.dlrm.main --config=workloads/dlrm/configs/mini.py --workdir=DIR`."""

if __name__ == "__main__":
    from tpubench.loops import preemption

    with preemption.ends_cleanly():  # first: SIGTERM/SIGINT during the imports (absl, JAX)
        from tpubench import entry

        entry.run("dlrm")
