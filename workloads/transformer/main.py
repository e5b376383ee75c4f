"""absl entry point: `python -m workloads.transformer.main --config=... --workdir=...`."""

if __name__ == "__main__":
    from tpubench.loops import preemption

    with preemption.ends_cleanly():  # first: SIGTERM/SIGINT during the imports (absl, JAX)
        from tpubench import entry

        entry.run("transformer")
