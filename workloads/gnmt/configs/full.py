"""MLPerf Training v0.7 GNMT, closed-division hyperparameters: GNMT-v2 on WMT16 En-De.

    tpubench prepare gnmt --config=full     # once: tfds download, vocabulary, tokenization
    tpubench run gnmt --config=full [--config.data.dir=gs://BUCKET/tensorflow_datasets]
    tpubench fit gnmt --config=full --topology=v4-16

Every number is the reference's, mlcommons/training v0.7 `rnn_translator/pytorch/` train.py
defaults (hidden 1024, 4 layers, dropout 0.2, shared embedding, label smoothing 0.1, Adam lr
1e-3, batch 128, grad clip 5, max-length-train 50, 8 epochs; warmup 200 steps, decay from 0.666
of training, 4 decays of x0.5; beam 5, len-norm 0.6 with constant 5.0, coverage 0.1,
max-length-test 150, target BLEU 24.0). 160,671,297 parameters at the reference's vocabulary
of 32,320 (tests check it with jax.eval_shape).

Needs (extras `tfds` and `text`): the reference's WMT16 de-en corpora (europarl-v7,
commoncrawl, news-commentary-v11) through tfds `wmt_translate`; eval on newstest2014 (tfds
`wmt14_translate/de-en` "test", 3,003 sentences). Vocabulary (`data.tokenizer = "bpe"`, built
by `tpubench prepare`, never on the clock): Moses tokenization (sacremoses), clean-corpus-n
1-80 and the latin-1 filter, 32,000 joint subword-nmt BPE merges, the reference's special
tokens and padding; BLEU by sacreBLEU `-lc --tokenize intl` after Moses detokenization. A tfds
run with this vocabulary is closed division; other tokenizers log it as open.

Not the reference's: the text comes from tfds's copy of the corpora; sacremoses and PyPI
subword-nmt stand for the pinned Moses perl scripts, not compared byte for byte on WMT16, so
the prepared vocabulary's size is unchecked against 32,320 (prepare refuses one larger than
model.vocab_size).

Measured: never run at full scale here (no accelerator); its MLPerf log (one step, tiny model,
synthetic data) fails only the quality target. `tpubench fit gnmt --config=full
--topology=v4:2x2x1 --json` (2026-12-02, compile only, 230 s of compile on a loaded 2-core
machine) reported per device: train block 3.01 GiB of 32 GiB HBM (9%), eval step 0.90 GiB,
0.870 TFLOP and 25.55 GB accessed per step, roofline step time >= 21.29 ms (at most 6,013
examples/s). Details: workloads/gnmt/README.md.
"""

import ml_collections

from tpubench.config import base_config
from tpubench.mlperf import rules

# What a closed run needs besides the code (`tpubench list` prints it; the run checks it).
CLOSED_NEEDS = (
    "WMT16 en-de through tfds, prepared once with `tpubench prepare gnmt "
    "--config=full` (Moses tokenization, 32,000 BPE merges)"
)


def get_config() -> ml_collections.ConfigDict:
    """The GNMT-v2 config with the v0.7 reference's hyperparameters."""
    c = base_config()
    c.workload = "gnmt"
    c.is_mlperf = True
    c.submission.division = "closed"  # open on tfds with a tokenizer other than bpe
    c.submission.open_division_reason = ""
    c.data.dataset = "wmt16_en_de"
    c.data.source = "tfds"
    c.data.tfds_train_subsets = ("europarl_v7", "commoncrawl", "newscommentary_v11")
    c.data.tfds_train_split = "train"
    c.data.tfds_eval = "wmt14_translate/de-en"
    c.data.eval_split = "test"  # newstest2014
    c.data.source_lang = "en"
    c.data.target_lang = "de"
    c.data.lowercase = False
    c.data.cache_dir = ""
    # The reference's vocabulary (download_dataset.sh, seq2seq/data/tokenizer.py; cited in
    # tpubench/text/moses_bpe.py): Moses tokenization, clean-corpus-n.perl 1 80, the
    # latin-1 filter, 32,000 joint subword-nmt BPE merges, specials, padded to a multiple of 8.
    c.data.tokenizer = "bpe"
    c.data.num_merges = 32000  # download_dataset.sh: merge_ops=32000
    c.data.clean_min_len = 1  # download_dataset.sh: clean-corpus-n.perl ... 1 80
    c.data.clean_max_len = 80
    c.data.vocab_pad_multiple = 8  # seq2seq/utils.py pad_vocabulary: 8 under --math fp16
    c.data.prepare_workers = 0  # Moses tokenization processes in the prepare step; 0 = all cores
    # Keys of data.tokenizer="subword" / "sentencepiece" (open division here):
    c.data.vocab_file = ""
    c.data.vocab_min_count = 6
    c.data.vocab_file_byte_limit = 10**6
    c.data.tokenizer_max_chars = 10**7

    # Model: GNMT-v2 (train.py --hidden-size 1024 --num-layers 4 --dropout 0.2).
    c.model.vocab_size = 32320
    c.model.num_classes = c.model.vocab_size
    c.model.hidden_size = 1024
    c.model.num_layers = 4
    c.model.dropout_rate = 0.2
    c.model.label_smoothing = 0.1  # train.py --smoothing
    c.model.init_weight = 0.1  # encoder.py/decoder.py init_weight: U(+-0.1) weights
    c.model.attention_scale = 0.0  # attention.py normalize_scalar init: 0 = 1/sqrt(hidden)
    c.model.dtype = "bfloat16"

    # Data shapes: train.py --max-length-train 50 (with BOS and EOS); longer pairs discarded.
    c.data.max_len = 50
    c.data.max_eval_input_len = 0  # the longest prepared eval source: never truncated
    c.data.global_batch_size = 128  # train.py --train-batch-size 128 (one worker)
    c.eval.batch_size = 128  # train.py --test-batch-size

    # Optimizer: Adam 1e-3, clip 5 (train.py --lr, --grad-clip; torch Adam defaults).
    c.optimizer.name = "adam"
    c.optimizer.learning_rate = 1.0e-3
    c.optimizer.beta_1 = 0.9
    c.optimizer.beta_2 = 0.999
    c.optimizer.epsilon = 1e-8
    c.optimizer.grad_clip = 5.0
    # Schedule: lr_scheduler.py WarmupMultiStepLR with train.py's defaults; floats are fractions
    # of the total steps (epochs x steps per epoch, or train_steps if set).
    c.schedule.epochs = 8  # train.py --epochs
    c.schedule.train_steps = 0
    c.schedule.warmup_steps = 200
    c.schedule.remain_steps = 0.666
    c.schedule.decay_interval = None
    c.schedule.decay_steps = 4
    c.schedule.decay_factor = 0.5

    # Eval: beam search on device (train.py test setup), uncased sacreBLEU intl.
    c.eval.beam_size = 5
    c.eval.len_norm_factor = 0.6
    c.eval.len_norm_const = 5.0
    c.eval.cov_penalty_factor = 0.1
    c.eval.max_decode_len = 149  # --max-length-test 150 counts the start token
    c.eval.bleu_tokenize = "intl"
    c.eval.target_metric = "bleu"
    c.eval.target_value = rules.target_value("gnmt")
    c.eval.every_samples = 0  # every epoch
    c.run.steps_per_dispatch = 1
    c.run.max_train_samples = 0
    return c
