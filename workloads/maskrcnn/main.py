"""python -m workloads.maskrcnn.main --config=workloads/maskrcnn/configs/mini.py --workdir=DIR"""

from tpubench import entry

if __name__ == "__main__":
    entry.run("maskrcnn")
