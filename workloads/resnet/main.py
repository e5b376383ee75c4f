"""python -m workloads.resnet.main --config=workloads/resnet/configs/mini.py --workdir=DIR"""

from tpubench import entry

if __name__ == "__main__":
    entry.run("resnet")
