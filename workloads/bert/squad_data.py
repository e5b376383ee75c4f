"""SQuAD v1.1 records from where they are kept, and the fixed-size arrays the model reads.

Sources of records (one dict per question: id, question, context, answers, answer_starts):
  * `json_records`: the official SQuAD JSON (`train-v1.1.json`, `dev-v1.1.json`), what the MLPerf
    Inference reference reads (`--val_data build/data/dev-v1.1.json`).
  * `tfds_records`: tensorflow-datasets `squad/v1.1` (splits `train`, `validation`).
Then `examples` (training: the reference's rule, a question whose first answer cannot be found
in the whitespace words of the context is dropped) and `squad.convert_examples`.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tpubench.errors import UsageError
from workloads.bert import squad

Record = dict[str, Any]
JSON_HINT = ("Download the SQuAD v1.1 JSON files (train-v1.1.json, dev-v1.1.json) as the MLPerf "
             "Inference reference's language/bert README says, into --config.data.dir")


def json_records(path: str | pathlib.Path) -> list[Record]:
    """Every question of a SQuAD v1.1 JSON file, in file order."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise UsageError(f"SQuAD file {path} not found. {JSON_HINT}.")
    records = []
    for article in json.loads(path.read_text())["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                records.append({
                    "id": qa["id"], "question": qa["question"], "context": paragraph["context"],
                    "answers": [a["text"] for a in qa["answers"]],
                    "answer_starts": [int(a["answer_start"]) for a in qa["answers"]],
                })
    return records


def tfds_records(dataset: str, split: str, data_dir: str | None) -> list[Record]:
    """Every question of a tfds SQuAD split (`squad/v1.1`), in the split's order."""
    import tensorflow_datasets as tfds

    def text(x: Any) -> str:
        return x.decode("utf-8") if isinstance(x, bytes) else str(x)

    ds = tfds.load(dataset, split=split, data_dir=data_dir or None, shuffle_files=False)
    records = []
    for ex in tfds.as_numpy(ds):
        records.append({
            "id": text(ex["id"]), "question": text(ex["question"]),
            "context": text(ex["context"]),
            "answers": [text(a) for a in ex["answers"]["text"]],
            "answer_starts": [int(s) for s in ex["answers"]["answer_start"]],
        })
    return records


def examples(records: Sequence[Record], training: bool) -> list[squad.Example]:
    """`squad.Example`s; for training, only those whose first answer is found in the context's
    words (the reference's `read_squad_examples`)."""
    out = []
    for r in records:
        ex = squad.make_example(r["id"], r["question"], r["context"], r["answers"],
                                r["answer_starts"] if training else ())
        if training:
            if not r["answers"]:
                continue
            actual = " ".join(ex.doc_tokens[ex.start_word:ex.end_word + 1])
            if actual.find(" ".join(r["answers"][0].split())) == -1:
                continue
        out.append(ex)
    return out


def ground_truths(records: Sequence[Record]) -> list[tuple[str, list[str]]]:
    """(question id, answer texts) of every record: what the official metric scores."""
    return [(r["id"], list(r["answers"])) for r in records]


def train_batches(arrays: dict[str, np.ndarray], batch_size: int, seed: int, start_step: int,
                  process_index: int, process_count: int) -> Iterator[dict[str, np.ndarray]]:
    """This process's share of the global batch of every step from `start_step`: features in
    an order reshuffled every epoch, a function of (seed, epoch), so a resumed run sees the
    same batches."""
    n = len(arrays["input_ids"])
    if n < batch_size:
        raise UsageError(f"{n} training features are fewer than the batch of {batch_size}.")
    per_epoch = n // batch_size
    local = batch_size // process_count
    step = start_step
    while True:
        epoch, within = divmod(step, per_epoch)
        order = np.random.default_rng([seed, epoch]).permutation(n)
        idx = order[within * batch_size:(within + 1) * batch_size]
        idx = idx[process_index * local:(process_index + 1) * local]
        yield {k: v[idx] for k, v in arrays.items()}
        step += 1
