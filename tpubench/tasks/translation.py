"""The host side shared by the translation workloads (Transformer, GNMT) on prepared data.

Both read what `tpubench/datasets/prepared_text.py` wrote (manifest, shared vocabulary, tokenized
eval sources and raw references), check it before any compute, score decoded ids with sacreBLEU in
example order and make random eval batches of source sentences. A workload mixes this in before
`Workload` and may override `prepare_config()` (GNMT: its length limit counts a start token the
prepared ids do not have).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import sacrebleu

from tpubench.datasets import prepared_text as prepared
from tpubench.datasets import translation as ip
from tpubench.errors import UsageError
from tpubench.evaluation import EvalResults
from tpubench.text import moses_bpe
from tpubench.text.ids import EOS_ID
from tpubench.workload import Batch


def corpus_bleu(hypotheses: list[str], references: list[str], tokenize: str = "intl") -> float:
    """Uncased corpus BLEU-4 as a fraction (sacreBLEU; "intl" = the reference's tokenization)."""
    return sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True,
                                 tokenize=tokenize).score / 100.0


class PreparedTranslation:
    """Mixin: prepared-data access, checks, BLEU and synthetic eval batches."""

    config: ml_collections.ConfigDict
    _host: dict[str, Any]  # manifest, tokenizer and data, loaded on first use
    eval_input_len: int

    @property
    def eos_id(self) -> int:
        """The end token's id: 1 in the subword and SentencePiece vocabularies, 3 in the GNMT
        reference's BPE vocabulary (`moses_bpe.py`)."""
        return moses_bpe.EOS_ID if self.config.data.tokenizer == "bpe" else EOS_ID

    def prepare_config(self) -> ml_collections.ConfigDict:
        """The config whose data keys name the prepared directory (default: the run's)."""
        return self.config

    def manifest(self) -> dict[str, Any]:
        """The prepared data's manifest (`UsageError` naming the prepare command if absent)."""
        if "manifest" not in self._host:
            self._host["manifest"] = prepared.manifest(self.prepare_config())
        return self._host["manifest"]

    def tokenizer(self):
        """The prepared shared vocabulary."""
        if "tokenizer" not in self._host:
            self._host["tokenizer"] = prepared.tokenizer(self.prepare_config())
        return self._host["tokenizer"]

    def eval_data(self) -> tuple[list[np.ndarray], list[str]]:
        """The prepared eval set: tokenized sources (with EOS) and raw references."""
        if "eval" not in self._host:
            self._host["eval"] = prepared.load_eval(self.prepare_config())
        return self._host["eval"]

    def eval_batches_padded(self, process_index: int, process_count: int) -> Iterator[Batch]:
        """The whole prepared eval split in fixed-shape batches padded with mask 0 (the eval
        reader of both data sources of every translation workload)."""
        return ip.eval_batches(self.eval_data()[0], self.config.eval.batch_size,
                               self.eval_input_len, process_index, process_count)

    def check_multi30k_files(self) -> None:
        """The Multi30k source's check: the train and eval files of the configured language
        pair are in `config.data.dir` (a UsageError naming the download command otherwise)."""
        c = self.config
        ip.check_multi30k(c.data.dir, (c.data.source_lang, c.data.target_lang),
                          ("train", c.data.eval_split))

    def check_prepared(self) -> None:
        """The prepared data exists, its vocabulary fits the model and its eval inputs fit
        (manifest only: the data itself is read after run_start); nothing for synthetic data."""
        c = self.config
        if c.data.source == "synthetic":
            return
        manifest = self.manifest()
        if manifest["vocab_size"] > c.model.vocab_size:
            raise UsageError(
                f"The prepared vocabulary has {manifest['vocab_size']} subtokens, more than "
                f"vocab_size={c.model.vocab_size}; set --config.model.vocab_size to at least that.")
        if self.eval_input_len < manifest["max_eval_source_len"]:
            raise UsageError(
                f"max_eval_input_len={c.data.max_eval_input_len} would truncate eval sources of up "
                f"to {manifest['max_eval_source_len']} tokens; eval inputs are never truncated. "
                "Use 0 (the longest prepared source) or a larger value.")

    def eval_finalize(self, results: EvalResults) -> float:
        """Corpus BLEU of the detokenized translations in example order, as a fraction:
        sacreBLEU with the references' settings (uncased, international tokenization)."""
        if self.config.data.source == "synthetic":
            return 0.0  # synthetic data measures speed; there are no references
        ids = np.asarray(results.per_example["example_id"])
        hyps = self.tokenizer().decode(np.asarray(results.per_example["decoded"]))
        _, references = self.eval_data()
        if sorted(ids.tolist()) != list(range(len(references))):
            raise ValueError(
                f"eval covered {len(ids)} examples, expected each of {len(references)} once")
        order = np.argsort(ids)
        return corpus_bleu([hyps[i] for i in order], [references[i] for i in ids[order]],
                           self.config.eval.bleu_tokenize)

    def synthetic_eval_batch(self, rng: jax.Array, batch_size: int) -> Batch:
        """Eval batches are source sentences: random (non-special) source tokens of the eval
        input length, ending in EOS, numbered by example."""
        ids = jax.random.randint(rng, (batch_size, self.eval_input_len), max(3, self.eos_id + 1),
                                 self.config.model.vocab_size, jnp.int32)
        return {"inputs": ids.at[:, -1].set(self.eos_id),
                "example_id": jnp.arange(batch_size, dtype=jnp.int32)}
