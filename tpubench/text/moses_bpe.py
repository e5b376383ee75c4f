"""The GNMT reference's vocabulary: Moses tokenization, corpus cleaning, joint BPE (subword-nmt).

What mlcommons/training v0.7 `rnn_translator/download_dataset.sh` does to WMT16 en-de, with the
real libraries (`sacremoses` for the Moses perl scripts, `subword-nmt` for its own scripts):

1. `tokenizer.perl -q -l LANG` on every file (Moses, pinned at 8c5eaa1a): `tokenize`, sacremoses'
   `MosesTokenizer(LANG).tokenize` with the script's defaults (escaping on, `-a` off).
2. `clean-corpus-n.perl train.tok de en train.tok.clean 1 80` on the training pairs only:
   `clean_corpus` (lengths 1-80 from that command line; ratio 9 and word length 1000 are the
   script's defaults, `scripts/training/clean-corpus-n.perl`).
3. `pytorch/scripts/filter_dataset.py` on train.tok.clean: drops every pair either side of which
   latin-1 cannot encode (`latin1_filter`).
4. `learn_bpe.py -s 32000` on `cat train.tok.clean.de train.tok.clean.en`: `learn`, through
   `subword_nmt.learn_bpe.learn_bpe` (its default min_frequency 2), codes in `bpe.<merges>`.
5. `apply_bpe.py -c bpe.32000` on every tokenized file: the cleaned training text, and the
   UNcleaned test set (`seq2seq/data/config.py`: `newstest2014.tok.bpe.32000.en`).
6. `cat train.tok.clean.bpe.32000.en train.tok.clean.bpe.32000.de | get_vocab.py | cut -f1 -d ' '`
   > `vocab.bpe.32000`, through `subword_nmt.get_vocab.get_vocab` (tokens by count, descending).

Then `seq2seq/data/tokenizer.py` (`Tokenizer`) builds the ids: `[<pad>, <unk>, <s>, <\\s>]`
(`seq2seq/data/config.py`: PAD, UNK, BOS, EOS = 0, 1, 2, 3) followed by the lines of
vocab.bpe.32000, padded with `madeupword0000`, ... to a multiple of `pad`
(`seq2seq/utils.py` `pad_vocabulary`: 8 under `--math fp16`, 1 under the default fp32); written
here as the file `vocab` (id = line number). `segment` maps unknown tokens to UNK; `detokenize`
joins tokens with " ", removes "@@ " then "@@" and the special tokens, and strips.

BLEU (`seq2seq/inference/inference.py`): `run_detokenizer` pipes the output through Moses
`detokenizer.perl` with no `-l`, i.e. its default language "en" (also for German output), and
`run_sacrebleu` scores it with `sacrebleu --score-only -lc --tokenize intl` against the raw
reference file. `BpeTokenizer.decode` does the first part; `translation.corpus_bleu` the second.

Not checked against the reference's own files (no WMT16 download here): that sacremoses 0.2.0 and
subword-nmt 0.3.8 (PyPI) give byte-identical output to the pinned perl scripts and to
subword-nmt 48ba99e on the whole corpus.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pathlib
import re
from collections.abc import Iterable, Sequence

import numpy as np

from tpubench.errors import UsageError

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "<\\s>"  # seq2seq/data/config.py
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3  # seq2seq/data/config.py
SEPARATOR = "@@"  # tokenizer.py Tokenizer(separator='@@'), apply_bpe.py's default
MADEUP = "madeupword{:04d}"  # tokenizer.py pad_vocabulary
DETOK_LANG = "en"  # inference.py run_detokenizer: detokenizer.perl without -l (default "en")
CLEAN_RATIO = 9.0  # clean-corpus-n.perl: my $ratio = 9
CLEAN_MAX_WORD_LENGTH = 1000  # clean-corpus-n.perl: my $max_word_length = 1000
MIN_FREQUENCY = 2  # learn_bpe.py --min-frequency default
VOCAB = "vocab"  # the padded id table written here, one token per line
INSTALL = "pip install 'tpubench[text]' (sacremoses and subword-nmt)"


def check_installed() -> None:
    """`UsageError` naming the install command if sacremoses or subword-nmt is missing."""
    missing = []
    for module, package in (("sacremoses", "sacremoses"), ("subword_nmt", "subword-nmt")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise UsageError(
            f"data.tokenizer='bpe' (the GNMT reference's Moses + subword-nmt vocabulary) needs "
            f"{' and '.join(missing)}: {INSTALL}, then run the command again.")


def codes_name(num_merges: int) -> str:
    """The reference's name of the BPE codes file (`bpe.32000`)."""
    return f"bpe.{num_merges}"


def vocab_name(num_merges: int) -> str:
    """The reference's name of the unpadded vocabulary (`vocab.bpe.32000`)."""
    return f"vocab.bpe.{num_merges}"


# ---- 1. Moses tokenization -----------------------------------------------------------------
def _tokenize_chunk(args: tuple[str, list[str]]) -> list[str]:
    from sacremoses import MosesTokenizer

    lang, lines = args
    tok = MosesTokenizer(lang=lang)
    return [tok.tokenize(line, return_str=True, escape=True, aggressive_dash_splits=False)
            for line in lines]


def tokenize(lines: Sequence[str], lang: str, workers: int = 1, chunk: int = 20000
             ) -> list[str]:
    """`tokenizer.perl -q -l LANG` on each line (in order; `workers` processes if > 1)."""
    lines = list(lines)
    if workers <= 1 or len(lines) <= chunk:
        return _tokenize_chunk((lang, lines))
    parts = [(lang, lines[i:i + chunk]) for i in range(0, len(lines), chunk)]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        return [line for part in pool.imap(_tokenize_chunk, parts) for line in part]


# ---- 2-3. cleaning -------------------------------------------------------------------------
_SPACES = re.compile(r"\s+")
_LONG_WORD = re.compile(r"[^\s|]{" + str(CLEAN_MAX_WORD_LENGTH + 1) + "}")


def clean_corpus(sources: Sequence[str], targets: Sequence[str], min_len: int, max_len: int
                 ) -> list[tuple[int, str, str]]:
    """clean-corpus-n.perl: (index, source, target) of the pairs it keeps, as it writes them
    ("|" removed unless the first pair is factored, whitespace collapsed and trimmed); a pair
    goes if a side is empty, has fewer than `min_len` or more than `max_len` words, the word
    counts differ by more than CLEAN_RATIO times, or a word is longer than 1000 characters."""
    factored = bool(sources) and ("|" in sources[0] or "|" in targets[0])
    kept = []
    for i, pair in enumerate(zip(sources, targets, strict=True)):
        sides = []
        for text in pair:
            text = text.rstrip("\n")
            if not factored:
                text = text.replace("|", "")
            sides.append(_SPACES.sub(" ", text).strip(" "))
        if not sides[0] or not sides[1]:
            continue
        n_src, n_tgt = (len(s.split(" ")) for s in sides)
        if not (min_len <= n_src <= max_len and min_len <= n_tgt <= max_len):
            continue
        if n_src / n_tgt > CLEAN_RATIO or n_tgt / n_src > CLEAN_RATIO:
            continue
        if _LONG_WORD.search(sides[0]) or _LONG_WORD.search(sides[1]):
            continue
        kept.append((i, sides[0], sides[1]))
    return kept


def latin1_filter(pairs: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """filter_dataset.py: keep the pairs whose both sides latin-1 can encode."""
    out = []
    for pair in pairs:
        try:
            pair[1].encode("latin1")
            pair[2].encode("latin1")
        except UnicodeEncodeError:
            continue
        out.append(pair)
    return out


# ---- 4-6. BPE and the vocabulary ------------------------------------------------------------
def learn(joint_lines: Iterable[str], num_merges: int, codes_path: pathlib.Path) -> None:
    """`learn_bpe.py -s num_merges` on the joint (already tokenized, cleaned) text (learn_bpe
    only iterates over its input's lines)."""
    from subword_nmt.learn_bpe import learn_bpe

    with open(codes_path, "w", encoding="utf-8") as out:
        learn_bpe(iter(joint_lines), out, num_merges, min_frequency=MIN_FREQUENCY)


def apply(codes_path: pathlib.Path, lines: Sequence[str]) -> list[str]:
    """`apply_bpe.py -c codes` on each line (separator "@@")."""
    from subword_nmt.apply_bpe import BPE

    with open(codes_path, encoding="utf-8") as f:
        bpe = BPE(f, separator=SEPARATOR)
    return [bpe.segment(line) for line in lines]


def vocabulary(bpe_lines: Iterable[str]) -> list[str]:
    """`get_vocab.py | cut -f1 -d ' '` on the BPE'd training text: tokens by count, ties in
    order of first appearance (get_vocab only iterates over its input's lines)."""
    from subword_nmt.get_vocab import get_vocab

    out = io.StringIO()
    get_vocab(iter(bpe_lines), out)
    return [line.split(" ")[0] for line in out.getvalue().split("\n") if line]


def padded(tokens: Sequence[str], multiple: int) -> list[str]:
    """tokenizer.py: the special tokens, the vocabulary, then `madeupwordNNNN` up to a
    multiple of `multiple`."""
    vocab = [*SPECIALS, *tokens]
    size = (len(vocab) + multiple - 1) // multiple * multiple
    return vocab + [MADEUP.format(i) for i in range(size - len(vocab))]


def write_lines(path: pathlib.Path, lines: Sequence[str]) -> None:
    """One item a line (UTF-8, "\\n")."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


class BpeTokenizer:
    """The prepared vocabulary (`vocab`, `bpe.<merges>` in a prepared directory): encode raw
    sentences as the reference's files are made, decode ids as the reference scores them."""

    def __init__(self, directory: str | os.PathLike, num_merges: int):
        self.directory = pathlib.Path(directory)
        self.codes_path = self.directory / codes_name(num_merges)
        text = (self.directory / VOCAB).read_text(encoding="utf-8")
        self.tokens = text.split("\n")[:-1]
        self.ids = {t: i for i, t in enumerate(self.tokens)}  # tokenizer.py tok2idx (last wins)
        self._detok = None

    @property
    def vocab_size(self) -> int:
        """Rows of the id table, padding included (the reference's `tokenizer.vocab_size`)."""
        return len(self.tokens)

    def ids_of(self, bpe_lines: Sequence[str]) -> list[np.ndarray]:
        """tokenizer.py `segment` without its BOS: the BPE'd tokens' ids (UNK if unknown),
        then EOS."""
        return [np.asarray([self.ids.get(t, UNK_ID) for t in line.split()] + [EOS_ID], np.int32)
                for line in bpe_lines]

    def encode(self, sentences: Sequence[str], lang: str, workers: int = 1) -> list[np.ndarray]:
        """Raw sentences of language `lang` -> Moses tokens -> BPE -> ids ending in EOS."""
        return self.ids_of(apply(self.codes_path, tokenize(sentences, lang, workers)))

    def decode_bpe(self, rows: np.ndarray) -> list[str]:
        """[n, length] ids -> the reference's `detokenize`: cut at EOS, tokens joined by " ",
        "@@ " and "@@" removed, special tokens removed, stripped. An id past the table (a model
        with more rows than the prepared vocabulary) reads as UNK."""
        out = []
        n = len(self.tokens)
        for row in np.asarray(rows).tolist():
            if EOS_ID in row:
                row = row[: row.index(EOS_ID)]
            text = " ".join(self.tokens[i if i < n else UNK_ID] for i in row
                            if i not in (PAD_ID, BOS_ID))
            text = text.replace(SEPARATOR + " ", "").replace(SEPARATOR, "")
            for special in (BOS, EOS, PAD):
                text = text.replace(special, "")
            out.append(text.strip())
        return out

    def decode(self, rows: np.ndarray) -> list[str]:
        """`decode_bpe`, then Moses detokenizer.perl as the reference runs it (language en)."""
        if self._detok is None:
            from sacremoses import MosesDetokenizer

            self._detok = MosesDetokenizer(lang=DETOK_LANG)
        return [self._detok.detokenize(text.split(), return_str=True, unescape=True)
                for text in self.decode_bpe(rows)]


# ---- the prepare step ------------------------------------------------------------------------
def check_config(config) -> None:
    """Before anything is read: the libraries are installed and the BPE keys make sense."""
    check_installed()
    d = config.data
    if int(d.num_merges) < 1:
        raise UsageError(f"data.num_merges={d.num_merges}: the number of BPE merges must be "
                         "positive (the reference learns 32,000).")
    if not 1 <= int(d.clean_min_len) <= int(d.clean_max_len):
        raise UsageError(f"data.clean_min_len={d.clean_min_len}, data.clean_max_len="
                         f"{d.clean_max_len}: need 1 <= min <= max (the reference: 1 and 80).")
    if int(d.vocab_pad_multiple) < 1:
        raise UsageError(f"data.vocab_pad_multiple={d.vocab_pad_multiple}: use 8 (the reference "
                         "under --math fp16) or 1 (fp32, no padding).")
    if d.source_lang == d.target_lang:
        raise UsageError(f"data.source_lang and data.target_lang are both {d.source_lang!r}.")


def num_workers(config) -> int:
    """Processes for the Moses tokenization (`data.prepare_workers`; 0 = every core)."""
    return int(config.data.get("prepare_workers", 1)) or os.cpu_count() or 1


def build(config, corpora: list[list[tuple[str, str]]], out: pathlib.Path
          ) -> tuple[BpeTokenizer, list[np.ndarray], list[np.ndarray], dict]:
    """Steps 1-6 on the training pairs (`corpora`: one list per corpus, in the reference's
    `cat` order) into `out`: returns the tokenizer, the kept pairs' source and target ids and
    the manifest's counts."""
    check_config(config)
    d = config.data
    merges = int(d.num_merges)
    lower = bool(d.lowercase)
    sources = [s.lower() if lower else s for pairs in corpora for s, _ in pairs]
    targets = [t.lower() if lower else t for pairs in corpora for _, t in pairs]
    if not sources:
        raise UsageError("The training corpus is empty: no sentence pair to learn BPE merges "
                         "from. Check data.source and its files (or tfds subsets).")
    workers = num_workers(config)
    kept = latin1_filter(clean_corpus(tokenize(sources, d.source_lang, workers),
                                      tokenize(targets, d.target_lang, workers),
                                      int(d.clean_min_len), int(d.clean_max_len)))
    if not kept:
        raise UsageError(
            f"No training pair survives cleaning (1 <= words <= {d.clean_max_len} per side, "
            "length ratio <= 9, latin-1 text): nothing to learn BPE merges from.")
    sides = {d.source_lang: [s for _, s, _ in kept], d.target_lang: [t for _, _, t in kept]}
    order = sorted(sides)  # the reference's files: learn on de then en, vocabulary en then de
    codes = out / codes_name(merges)
    learn((line for lang in order for line in sides[lang]), merges, codes)
    bpe = {lang: apply(codes, lines) for lang, lines in sides.items()}
    tokens = vocabulary(line for lang in order[::-1] for line in bpe[lang])
    write_lines(out / vocab_name(merges), tokens)
    write_lines(out / VOCAB, padded(tokens, int(d.vocab_pad_multiple)))
    tok = BpeTokenizer(out, merges)
    info = {"vocab_origin": "moses+subword-nmt", "num_merges": merges,
            "bpe_vocab_tokens": len(tokens), "train_pairs_cleaned": len(kept)}
    return tok, tok.ids_of(bpe[d.source_lang]), tok.ids_of(bpe[d.target_lang]), info
