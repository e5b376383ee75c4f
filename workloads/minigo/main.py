"""python -m workloads.minigo.main --config=workloads/minigo/configs/mini.py --workdir=DIR"""

from tpubench import entry

if __name__ == "__main__":
    entry.run("minigo")
