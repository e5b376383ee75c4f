"""python -m workloads.rnnt.main --config=workloads/rnnt/configs/mini.py --workdir=DIR"""

from tpubench import entry

if __name__ == "__main__":
    entry.run("rnnt")
