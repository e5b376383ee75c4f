"""`python -m workloads.deeplab.main --config=workloads/deeplab/configs/mini.py --workdir=DIR`."""

from tpubench import entry

if __name__ == "__main__":
    entry.run("deeplab")
