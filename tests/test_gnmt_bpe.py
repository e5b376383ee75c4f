"""The GNMT reference's vocabulary (`data.tokenizer="bpe"`, tpubench/text/moses_bpe.py):
prepared on a small made parallel corpus with 200 merges, checked against the reference's shell
pipeline (download_dataset.sh) run with the libraries' own command-line tools."""

import builtins
import json
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest
import sacrebleu
from sacremoses import MosesDetokenizer, MosesTokenizer

from tpubench import config as config_lib
from tpubench.datasets import prepared_text as prepared
from tpubench.errors import UsageError
from tpubench.text import moses_bpe
from workloads.gnmt.workload import GNMTWorkload

MERGES = 200
BIN = pathlib.Path(sys.executable).parent
NOUNS = [("dog", "Hund"), ("cat", "Katze"), ("house", "Haus"), ("child", "Kind"),
         ("river", "Fluss"), ("teacher", "Lehrer"), ("garden", "Garten"), ("car", "Auto"),
         ("bicycle", "Fahrrad"), ("mountain", "Berg"), ("window", "Fenster")]
ADJS = [("big", "große"), ("small", "kleine"), ("red", "rote"), ("old", "alte"),
        ("happy", "glückliche"), ("strange", "seltsame"), ("beautiful", "schöne")]
FRAMES = [
    ("The {a} {n} is near the {n2}.", "Der {a} {n} ist nahe dem {n2}."),
    ("It's the {n}'s {n2}, isn't it?", "Es ist der {n2} des {n}, nicht wahr?"),
    ('She said "{a} {n}" & left.', 'Sie sagte "{a} {n}" & ging.'),  # „“ fail latin-1
    ("Where is the {a} {n} | the {n2}?", "Wo ist der {a} {n} | der {n2}?"),
    ("About 3.5 million {n}s (e.g. {n2}s) were counted.",
     "Etwa 3,5 Mio. {n} (z.B. {n2}) wurden gezählt."),
]
# Pairs the reference's cleaning drops (clean-corpus-n.perl 1 80, ratio 9; filter_dataset.py)
# and the boundary pairs it keeps.
DROPPED = [(" ".join(["word"] * 81), " ".join(["Wort"] * 10)), ("Yes", " ".join(["eins"] * 10)),
           ("Hello world", "Привет Welt"), ("Nothing here", "")]
KEPT_AT_BOUNDARY = [(" ".join(["word"] * 80), " ".join(["Wort"] * 9)),
                    ("No", " ".join(["neun"] * 9))]


def made_corpus(n: int = 300) -> list[tuple[str, str]]:
    """`n` English-German pairs from templates (quotes, apostrophes, &, |, abbreviations)."""
    pairs = []
    for i in range(n):
        en, de = FRAMES[i % len(FRAMES)]
        (a_en, a_de), (n_en, n_de) = ADJS[i % len(ADJS)], NOUNS[(i // 5) % len(NOUNS)]
        n2_en, n2_de = NOUNS[(i // 3 + 4) % len(NOUNS)]
        pairs.append((en.format(a=a_en, n=n_en, n2=n2_en), de.format(a=a_de, n=n_de, n2=n2_de)))
    return pairs


TRAIN = made_corpus()[:150] + DROPPED + KEPT_AT_BOUNDARY + made_corpus()[150:]
EVAL = [("The happy teacher is near the river.", "Der glückliche Lehrer ist nahe dem Fluss."),
        ("The zebra's xylophone & quiz.", "Das „Xylophon“ des Zebras & Quiz."),
        (" ".join(["word"] * 90), "Wort")]  # the test set is never cleaned: kept


def _config(tmp_path, **overrides):
    c = config_lib.load("gnmt", "full")
    config_lib.apply_overrides(c, {"data.cache_dir": str(tmp_path), "data.num_merges": MERGES,
                                   "data.prepare_workers": 1, "data.global_batch_size": 8,
                                   **overrides})
    return c


@pytest.fixture(scope="module")
def bpe_workload(tmp_path_factory):
    """The full config's workload with its data prepared from the made corpus."""
    w = GNMTWorkload(_config(tmp_path_factory.mktemp("bpe_cache")))
    prepared.prepare(w.prepare_config(), lambda: [TRAIN[:200], TRAIN[200:]], lambda: EVAL)
    return w


def _sh(command: str, cwd: pathlib.Path) -> None:
    subprocess.run(["bash", "-c", f"export PATH={BIN}:$PATH; set -e; {command}"], cwd=cwd,
                   check=True, capture_output=True)


def test_prepare_is_the_reference_pipeline_run_with_the_libraries_tools(bpe_workload, tmp_path):
    """The clean step drops exactly the designed pairs, and the codes, vocab.bpe.200 and every
    training id equal what download_dataset.sh's commands give (sacremoses and subword-nmt
    CLIs: tokenize -x, `cat de en | learn-bpe -s 200`, apply-bpe, `cat en de | get-vocab`) on the
    pairs that survive. Bites: clean max 80 -> 79 (the 80-word pair is dropped, counts differ);
    no latin-1 filter (count); the vocabulary counted de then en (vocab.bpe.200 order differs);
    Moses escaping off (codes differ)."""
    w = bpe_workload
    d = prepared.directory(w.prepare_config())
    m = json.loads((d / prepared.MANIFEST).read_text())
    survivors = [p for p in TRAIN if p not in DROPPED]
    assert m["train_pairs"] == len(TRAIN) and m["train_pairs_cleaned"] == len(survivors)
    assert m["eval_examples"] == len(EVAL) and m["num_merges"] == MERGES
    for lang, side in (("en", 0), ("de", 1)):
        (tmp_path / f"train.{lang}").write_text("".join(p[side] + "\n" for p in survivors))
        _sh(f"sacremoses -l {lang} -j 1 -q tokenize -x < train.{lang} > train.tok.clean.{lang}",
            tmp_path)
    _sh(f"cat train.tok.clean.de train.tok.clean.en | subword-nmt learn-bpe -s {MERGES} > codes;"
        " for l in en de; do subword-nmt apply-bpe -c codes < train.tok.clean.$l"
        " > train.bpe.$l; done; cat train.bpe.en train.bpe.de | subword-nmt get-vocab"
        " | cut -f1 -d ' ' > vocab", tmp_path)
    assert (d / f"bpe.{MERGES}").read_text() == (tmp_path / "codes").read_text()
    assert (d / f"vocab.bpe.{MERGES}").read_text() == (tmp_path / "vocab").read_text()
    ids = {t: i for i, t in enumerate(
        list(moses_bpe.SPECIALS) + (tmp_path / "vocab").read_text().split("\n")[:-1])}
    sources, targets, _ = prepared.load_train(w.prepare_config())
    for got, lang in ((sources, "en"), (targets, "de")):
        lines = (tmp_path / f"train.bpe.{lang}").read_text().split("\n")[:-1]
        want = [[ids[t] for t in line.split(" ")] + [moses_bpe.EOS_ID] for line in lines]
        assert [g.tolist() for g in got] == want


def test_vocabulary_file_has_the_reference_specials_first_and_is_padded_to_8(bpe_workload):
    """`vocab` = <pad> <unk> <s> <\\s>, vocab.bpe.200, then madeupword0000... to a multiple of 8
    (tokenizer.py with pad 8); ids are line numbers. Bites: specials in another order (EOS no
    longer id 3); padding to 8 dropped (size % 8); madeupword numbered from 1."""
    d = prepared.directory(bpe_workload.prepare_config())
    vocab = (d / "vocab").read_text().split("\n")[:-1]
    bpe_tokens = (d / f"vocab.bpe.{MERGES}").read_text().split("\n")[:-1]
    assert vocab[:4] == ["<pad>", "<unk>", "<s>", "<\\s>"]
    assert vocab[4:4 + len(bpe_tokens)] == bpe_tokens
    pad = vocab[4 + len(bpe_tokens):]
    assert len(vocab) % 8 == 0 and len(pad) < 8
    assert pad == [f"madeupword{i:04d}" for i in range(len(pad))]
    tok = bpe_workload.tokenizer()
    assert tok.vocab_size == len(vocab) == bpe_workload.manifest()["vocab_size"]
    assert (tok.ids["<\\s>"], tok.ids["<s>"]) == (bpe_workload.eos_id, bpe_workload.start_id)


def test_decode_undoes_bpe_and_detokenizes_as_the_reference(bpe_workload):
    """encode -> decode gives back each training sentence exactly as sacremoses' tokenizer
    (its language) then detokenizer (language en, as the reference's detokenizer.perl without
    -l) would; a row is cut at EOS and PAD/BOS are dropped; unknown pieces decode as <unk>.
    Bites: keeping "@@" (pieces not joined); detokenizing German as de (the English sentences'
    "'s" stay apart); not cutting at EOS; no guard for ids past the table (IndexError: a
    model with more rows than the vocabulary, as the smoke run with bpe hit)."""
    w = bpe_workload
    tok = w.tokenizer()
    detok = MosesDetokenizer(lang="en")
    for lang, side in (("en", 0), ("de", 1)):
        sentences = [p[side] for p in TRAIN[:40]]
        rows = tok.encode(sentences, lang)
        assert any("@@" in tok.tokens[i] for r in rows for i in r)  # BPE really splits words
        moses = MosesTokenizer(lang)
        want = [detok.detokenize(moses.tokenize(s, escape=True)) for s in sentences]
        width = max(len(r) for r in rows) + 3
        padded = np.full((len(rows), width), moses_bpe.EOS_ID + 10, np.int32)  # junk after EOS
        for i, r in enumerate(rows):
            padded[i, :len(r)] = r
        assert tok.decode(padded) == want
    assert "It's" in tok.decode(tok.encode(["It's the dog's car."], "en"))[0]
    row = np.array([[moses_bpe.BOS_ID, *tok.encode(["The dog"], "en")[0][:-1], moses_bpe.PAD_ID,
                     moses_bpe.EOS_ID, 7]])
    assert tok.decode(row) == ["The dog"]
    assert tok.decode(np.array([[tok.vocab_size + 5, moses_bpe.EOS_ID]])) == ["<unk>"]
    # pieces the vocabulary lacks ("z@@", "a") are UNK, whose token has no "@@" (tokenizer.py)
    assert tok.decode(tok.encode(["The zebra"], "en")) == ["The <unk> ebr<unk>"]
    # eval_finalize scores the decoded text with sacreBLEU -lc --tokenize intl (inference.py)
    from tpubench.evaluation import EvalResults

    refs = [t for _, t in EVAL]
    ids = tok.encode(refs, "de")
    rows = np.zeros((len(ids), max(map(len, ids))), np.int32)
    for i, r in enumerate(ids):
        rows[i, :len(r)] = r
    got = w.eval_finalize(EvalResults(sums={}, per_example={
        "decoded": rows[::-1], "example_id": np.arange(len(ids))[::-1]}, examples=len(ids)))
    hyps = tok.decode(rows)
    assert got == sacrebleu.corpus_bleu(hyps, [refs], lowercase=True,
                                        tokenize="intl").score / 100


def test_batches_end_in_the_reference_eos_and_the_decoder_starts_from_bos(bpe_workload,
                                                                        monkeypatch):
    """On the prepared ids: train and eval rows end in EOS (3); the loss feeds the decoder BOS
    (2) then the targets (the reference's targets begin with BOS) and beam search starts from
    BOS and stops at EOS (a stand-in model records what it is given: nothing compiles).
    Bites: the loss's shift_right without the start id (PAD 0 first); beam search given
    tpubench.text.ids.EOS_ID (1, the reference's UNK)."""
    import jax.numpy as jnp

    from workloads.gnmt import decode as decode_lib

    w = bpe_workload
    batch = next(w.train_batches(0, 0, 1))
    eval_batch = next(w.eval_batches(0, 1))
    eval_inputs = eval_batch["inputs"][:3]
    for rows in (batch["inputs"], batch["targets"], eval_inputs):
        lengths = (rows != moses_bpe.PAD_ID).sum(1)
        assert (rows[np.arange(len(rows)), lengths - 1] == moses_bpe.EOS_ID).all()
    # Sources begin with BOS, train and eval (tokenizer.py `segment`), targets do not (their
    # BOS is the decoder's start token); the shapes are the batch spec's.
    # Bites (tried): sources without BOS (the reference's encoder reads `<s>` first).
    for rows in (batch["inputs"], eval_batch["inputs"]):
        np.testing.assert_array_equal(rows[:, 0], moses_bpe.BOS_ID)
        assert (rows[:, 1:] != moses_bpe.BOS_ID).all()
    assert (batch["targets"] != moses_bpe.BOS_ID).all()
    for name, train, got in (("inputs", True, batch), ("targets", True, batch),
                             ("inputs", False, eval_batch)):
        assert got[name].shape == w.batch_spec(got[name].shape[0], train)[name].shape, name
    for make, train in ((w.synthetic_batch, True), (w.synthetic_eval_batch, False)):
        inputs = make(jax.random.PRNGKey(0), 2)["inputs"]
        assert inputs.shape == w.batch_spec(2, train)["inputs"].shape
        np.testing.assert_array_equal(inputs[:, 0], moses_bpe.BOS_ID)
    seen = {}

    class Recorder:
        def apply(self, variables, *args, method=None, **kwargs):
            seen.setdefault(getattr(method, "__name__", "call"), args)
            x = args[0]
            if method is None:  # teacher-forced logits, one row per decoder input
                return jnp.zeros((*args[1].shape, 8))
            return jnp.zeros((x.shape[0], x.shape[1], 4))  # encode / attention_keys

    def beam_search(step, cache, batch, beam, in_len, length, start_id, eos_id, *rest):
        seen["beam"] = (start_id, eos_id)
        return jnp.zeros((batch, length - 1), jnp.int32), jnp.zeros((batch,))

    monkeypatch.setattr(w, "model", lambda train=False: Recorder())
    monkeypatch.setattr(decode_lib, "beam_search", beam_search)
    w.loss({}, {}, batch, None)
    tgt_in = np.asarray(seen["call"][1])
    np.testing.assert_array_equal(tgt_in[:, 0], moses_bpe.BOS_ID)
    np.testing.assert_array_equal(tgt_in[:, 1:], batch["targets"][:, :-1])
    w.translate({}, jnp.asarray(eval_inputs))
    assert seen["beam"] == (moses_bpe.BOS_ID, moses_bpe.EOS_ID)


def test_the_full_config_uses_the_reference_vocabulary_and_is_closed_on_tfds(tmp_path):
    """The full config: bpe, 32,000 merges, pad 8, clean 1-80; a tfds run with it stays closed,
    one with another tokenizer is open with the reason. Bites: the open-division branch without
    its tokenizer condition."""
    c = config_lib.load("gnmt", "full")
    assert (c.data.tokenizer, c.data.num_merges, c.data.vocab_pad_multiple,
            c.data.clean_min_len, c.data.clean_max_len) == ("bpe", 32000, 8, 1, 80)
    w = GNMTWorkload(c)
    assert c.submission.division == "closed" and c.is_mlperf and w.eos_id == 3
    other = _config(tmp_path, **{"data.tokenizer": "subword"})
    GNMTWorkload(other)
    assert other.submission.division == "open" and not other.is_mlperf
    assert "subword" in other.submission.open_division_reason


def test_bad_input_is_a_usage_error_before_the_corpus_is_read(tmp_path, monkeypatch):
    """Missing sacremoses or subword-nmt names the install command, a bad num_merges the
    reference's value, an empty corpus says so, and the Transformer refuses this vocabulary.
    Bites: check_config called after read_train (the missing-package case reads the corpus);
    no empty-corpus check (reported as "no pair survives cleaning" instead)."""
    def never():
        raise AssertionError("the corpus was read before the check")

    real_import = builtins.__import__

    def no_subword_nmt(name, *args, **kwargs):
        if name.startswith("subword_nmt"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(builtins, "__import__", no_subword_nmt)
        with pytest.raises(UsageError, match=r"subword-nmt: pip install 'tpubench\[text\]'"):
            prepared.prepare(_config(tmp_path), never, never)
    with pytest.raises(UsageError, match="32,000"):
        prepared.prepare(_config(tmp_path, **{"data.num_merges": 0}), never, never)
    with pytest.raises(UsageError, match="training corpus is empty"):
        prepared.prepare(_config(tmp_path), lambda: [[]], never)
    with pytest.raises(UsageError, match="No training pair survives cleaning"):
        prepared.prepare(_config(tmp_path), lambda: [DROPPED], never)
    c = config_lib.load("transformer", "full")
    c.data.tokenizer = "bpe"
    from workloads.transformer.workload import TransformerWorkload

    with pytest.raises(UsageError, match="GNMT reference's vocabulary"):
        TransformerWorkload(c)
