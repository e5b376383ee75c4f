"""The special ids of the subword and SentencePiece vocabularies (and of the models that read
them): PAD is also the decoder's start token; there is no BOS. The GNMT reference's BPE
vocabulary numbers its specials differently (`moses_bpe.py`)."""

PAD_ID = 0
EOS_ID = 1
