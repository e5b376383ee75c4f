"""`python -m workloads.deeplab.main --config=workloads/deeplab/configs/mini.py --workdir=DIR`."""

if __name__ == "__main__":
    from tpubench.loops import preemption

    with preemption.ends_cleanly():  # first: SIGTERM/SIGINT during the imports (absl, JAX)
        from tpubench import entry

        entry.run("deeplab")
