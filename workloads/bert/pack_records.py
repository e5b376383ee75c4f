"""Packs MLPerf BERT training TFRecords for `--config.data.packed=True` (see `packing.py`).

    python -m workloads.bert.pack_records --input_dir=MLPERF_BERT --output_dir=PACKED \\
        [--pattern='part-*'] [--max_seq_length=512] [--max_predictions_per_seq=76] \\
        [--max_per_row=3]

Each input file becomes a packed file of the same name in `output_dir` (its examples packed by
best-fit decreasing in chunks of `--chunk`), and `output_dir/packing.json` records the counts:
examples, rows, examples per row, and the padding share before and after. Then train with
`--config.data.packed=True --config.data.dir=PACKED` (the eval file stays unpacked: copy or link
`eval_10k` beside the packed shards). A file already packed is skipped, so a stopped run resumes.
"""

from __future__ import annotations

import json
import os
import pathlib

from absl import app, flags

from workloads.bert import input_pipeline, packing

FLAGS = flags.FLAGS
flags.DEFINE_string("input_dir", None, "Folder of the MLPerf BERT TFRecords.", required=True)
flags.DEFINE_string("output_dir", None, "Folder for the packed TFRecords.", required=True)
flags.DEFINE_string("pattern", "part-*", "Training files under input_dir.")
flags.DEFINE_integer("max_seq_length", 512, "Tokens per record (as the records were made).")
flags.DEFINE_integer("max_predictions_per_seq", 76, "Prediction slots per record (as made).")
flags.DEFINE_integer("max_per_row", 3, "At most this many examples share a packed row.")
flags.DEFINE_integer("chunk", 10_000, "Examples packed together (best-fit decreasing).")


def pack_file(src: str, dst: pathlib.Path, seq: int, preds: int, per_row: int,
              chunk: int) -> dict[str, float]:
    """Packs one TFRecord file into `dst` (written under a temporary name, then renamed)."""
    examples = input_pipeline.read_tfrecords([src], seq, preds)
    packed = packing.pack(examples, preds, per_row, chunk)
    tmp = dst.with_name(dst.name + ".tmp")
    input_pipeline.write_tfrecords(str(tmp), packed)
    os.replace(tmp, dst)
    return packing.stats(examples, packed)


def main(argv: list[str]) -> None:
    del argv
    files = input_pipeline.record_files(FLAGS.input_dir, FLAGS.pattern)
    if not files:
        raise app.UsageError(f"No files match {FLAGS.pattern!r} under {FLAGS.input_dir}.")
    out = pathlib.Path(FLAGS.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = out / "packing.json"
    done = json.loads(report.read_text()) if report.is_file() else {}
    for src in files:
        name = os.path.basename(src)
        if name in done and (out / name).is_file():
            continue
        done[name] = pack_file(src, out / name, FLAGS.max_seq_length,
                               FLAGS.max_predictions_per_seq, FLAGS.max_per_row, FLAGS.chunk)
        report.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n")
        print(name, json.dumps(done[name]))


if __name__ == "__main__":
    app.run(main)
