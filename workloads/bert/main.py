"""BERT entry point.

    python -m workloads.bert.main --config=workloads/bert/configs/mini.py --workdir=DIR
"""

from tpubench import entry

if __name__ == "__main__":
    entry.run("bert")
