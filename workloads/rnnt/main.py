"""python -m workloads.rnnt.main --config=workloads/rnnt/configs/mini.py --workdir=DIR"""

if __name__ == "__main__":
    from tpubench.loops import preemption

    with preemption.ends_cleanly():  # first: SIGTERM/SIGINT during the imports (absl, JAX)
        from tpubench import entry

        entry.run("rnnt")
