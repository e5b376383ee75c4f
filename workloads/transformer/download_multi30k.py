"""Download Multi30k task 1 (English-German captions) from its public source, checksum-verified.

    python -m workloads.transformer.download_multi30k --data_dir=DIR

writes DIR/multi30k/{train,val,test_2016_flickr}.{de,en}.gz (1.3 MB). The documented command of
the Multi30k minis; the tool is `tpubench/datasets/download_multi30k.py`, shared with GNMT and
BERT's Multi30k minis.
"""

from tpubench.datasets import download_multi30k

if __name__ == "__main__":
    download_multi30k.run()
