"""`python -m workloads.dlrm.main --config=workloads/dlrm/configs/mini.py --workdir=DIR`."""

from tpubench import entry

if __name__ == "__main__":
    entry.run("dlrm")
