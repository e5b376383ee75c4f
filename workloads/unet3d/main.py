"""python -m workloads.unet3d.main --config=workloads/unet3d/configs/mini.py --workdir=DIR"""

from tpubench import entry

if __name__ == "__main__":
    entry.run("unet3d")
