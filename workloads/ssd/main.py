"""python -m workloads.ssd.main --config=workloads/ssd/configs/mini.py --workdir=DIR"""

from tpubench import entry

if __name__ == "__main__":
    entry.run("ssd")
