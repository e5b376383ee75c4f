"""Sequence packing for BERT pre-training: several MLPerf examples per row of `max_seq_length`.

An MLPerf BERT example (`create_pretraining_data.py`) is `[CLS] A [SEP] B [SEP]` padded to 512
tokens; many are much shorter, and a padded token costs as much compute as a real one. Packing
puts up to `max_per_row` examples into one row (Krell et al. 2021, "Efficient Sequence Packing
without Cross-contamination", the scheme NVIDIA's and Graphcore's v1.0 BERT submissions used;
Google's v0.7 JAX record did not pack). A packed row holds:

  input_ids, segment_ids         the examples' tokens one after the other, then padding
  input_mask                     0 on padding, k on the tokens of the row's k-th example (1-based)
  position_ids                   0, 1, ... restarting at every example (the learned positions)
  masked_lm_positions/ids/weights   every example's predictions, positions moved to the row's
  next_sentence_positions        each example's `[CLS]` index in the row (0 for an empty slot)
  next_sentence_labels/weights   its label, and 1.0 (0.0 for an empty slot)

The model (`model.py`) attends only within an example (a block-diagonal mask from `input_mask`),
embeds `position_ids`, and pools each example's own `[CLS]`; so a packed row computes exactly
what its examples compute alone (tests/test_bert_packing.py). The loss sums masked-LM terms
over the row's predictions (as unpacked: sum(w * xent) / sum(w)) and averages next-sentence
terms over real examples.

`pack` assigns examples to rows by best-fit decreasing within chunks of `chunk` consecutive
examples (so a fixed input gives fixed rows; see `assign`). Packing is done once, offline, into
new TFRecords (`python -m workloads.bert.pack_records`), so the
training pipeline reads fixed rows and resumes by skipping them as before.
"""

from __future__ import annotations

import numpy as np

from tpubench.errors import UsageError

Batch = dict[str, np.ndarray]

PACKED_FEATURES = ("position_ids", "next_sentence_positions", "next_sentence_weights")


def lengths(examples: Batch) -> np.ndarray:
    """Tokens of each unpacked example (its `input_mask` sum); `UsageError` if the mask has
    holes (an unpacked example's tokens are a prefix of its row)."""
    mask = np.asarray(examples["input_mask"])
    n = mask.sum(axis=1)
    prefix = (np.arange(mask.shape[1])[None] < n[:, None]).astype(mask.dtype)
    if set(PACKED_FEATURES) & set(examples) or not np.array_equal(mask, prefix):
        raise UsageError("input_mask is not 1 on a prefix and 0 after it: these examples are "
                         "not unpacked MLPerf BERT examples (already packed?).")
    return n


def predictions(examples: Batch) -> np.ndarray:
    """Used prediction slots of each example (weights > 0, a prefix as the reference writes)."""
    return (np.asarray(examples["masked_lm_weights"]) > 0).sum(axis=1)


def assign(tokens: np.ndarray, preds: np.ndarray, seq_len: int, max_predictions: int,
           max_per_row: int, chunk: int = 10_000) -> list[list[int]]:
    """Rows of example indices by best-fit decreasing within each chunk of `chunk` consecutive
    examples: longest first (ties by index), each example goes into the open row with the least
    token room that still takes its tokens, its predictions and one more example, else into a
    new row. Every row fits `seq_len` tokens, `max_predictions` predictions, `max_per_row`
    examples; rows are listed in the order they were opened, each sorted by index."""
    if max_per_row < 1:
        raise UsageError(f"max_per_row={max_per_row}: a row holds at least one example.")
    if tokens.size and (tokens.max() > seq_len or preds.max() > max_predictions):
        raise UsageError(f"An example has more than {seq_len} tokens or {max_predictions} "
                         "predictions: pack with the max_seq_length and max_predictions_per_seq "
                         "the records were made with.")
    rows: list[list[int]] = []
    for start in range(0, len(tokens), chunk):
        idx = np.arange(start, min(start + chunk, len(tokens)))
        chunk_rows: list[list[int]] = []
        room_pred: list[int] = []
        by_room: list[list[int]] = [[] for _ in range(seq_len + 1)]  # open rows by token room
        for i in idx[np.lexsort((idx, -tokens[idx]))].tolist():
            t, p = int(tokens[i]), int(preds[i])
            found = None
            for room in range(t, seq_len + 1):
                found = next((r for r in by_room[room] if room_pred[r] >= p), None)
                if found is not None:
                    by_room[room].remove(found)
                    break
            if found is None:
                found, room = len(chunk_rows), seq_len
                chunk_rows.append([])
                room_pred.append(max_predictions)
            chunk_rows[found].append(i)
            room_pred[found] -= p
            if len(chunk_rows[found]) < max_per_row:
                by_room[room - t].append(found)
        rows.extend(sorted(row) for row in chunk_rows)
    return rows


def build(examples: Batch, rows: list[list[int]], max_per_row: int) -> Batch:
    """The packed arrays of `rows` (lists of indices into the unpacked `examples`)."""
    seq = examples["input_ids"].shape[1]
    preds = examples["masked_lm_positions"].shape[1]
    n = len(rows)
    out = {k: np.zeros((n, seq), np.int32)
           for k in ("input_ids", "input_mask", "segment_ids", "position_ids")}
    out.update({k: np.zeros((n, preds), np.int32) for k in ("masked_lm_positions",
                                                            "masked_lm_ids")})
    out["masked_lm_weights"] = np.zeros((n, preds), np.float32)
    out.update({k: np.zeros((n, max_per_row), np.int32)
                for k in ("next_sentence_positions", "next_sentence_labels")})
    out["next_sentence_weights"] = np.zeros((n, max_per_row), np.float32)
    tokens, used = lengths(examples), predictions(examples)
    for r, row in enumerate(rows):
        at = slot = 0
        for k, i in enumerate(row):
            t, p = int(tokens[i]), int(used[i])
            out["input_ids"][r, at:at + t] = examples["input_ids"][i, :t]
            out["segment_ids"][r, at:at + t] = examples["segment_ids"][i, :t]
            out["input_mask"][r, at:at + t] = k + 1
            out["position_ids"][r, at:at + t] = np.arange(t)
            out["masked_lm_positions"][r, slot:slot + p] = \
                examples["masked_lm_positions"][i, :p] + at
            out["masked_lm_ids"][r, slot:slot + p] = examples["masked_lm_ids"][i, :p]
            out["masked_lm_weights"][r, slot:slot + p] = examples["masked_lm_weights"][i, :p]
            out["next_sentence_positions"][r, k] = at
            out["next_sentence_labels"][r, k] = np.asarray(examples["next_sentence_labels"])[i]
            out["next_sentence_weights"][r, k] = 1.0
            at, slot = at + t, slot + p
    return out


def pack(examples: Batch, max_predictions: int, max_per_row: int, chunk: int = 10_000) -> Batch:
    """Packed rows of `examples` (unpacked, as `input_pipeline.read_tfrecords` returns them)."""
    seq = examples["input_ids"].shape[1]
    rows = assign(lengths(examples), predictions(examples), seq, max_predictions, max_per_row,
                  chunk)
    return build(examples, rows, max_per_row)


def stats(examples: Batch, packed: Batch) -> dict[str, float]:
    """Rows and padding before and after: what packing saves on these examples."""
    real = float(np.asarray(examples["input_mask"]).sum())
    seq = examples["input_ids"].shape[1]
    rows, n = len(packed["input_ids"]), len(examples["input_ids"])
    return {"examples": n, "rows": rows, "examples_per_row": n / max(rows, 1),
            "padding_share_unpacked": 1.0 - real / (n * seq),
            "padding_share_packed": 1.0 - real / (rows * seq)}
