"""absl entry point: `python -m workloads.gnmt.main --config=... --workdir=...`."""

from tpubench import entry

if __name__ == "__main__":
    entry.run("gnmt")
