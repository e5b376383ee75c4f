"""Download the Free Spoken Digit Dataset (3,000 recordings) from its public GitHub repository.

    python -m workloads.rnnt.download_fsdd --data_dir=DIR

writes DIR/fsdd/recordings/{digit}_{speaker}_{index}.wav (about 10 MB), from the release
archive of Jakobovski/free-spoken-digit-dataset v1.0.10; the archive's SHA-256 is printed so a
user can pin it. Terms: CC BY-SA 4.0. A folder that already holds the 3,000 files is kept.
"""

from __future__ import annotations

import hashlib
import io
import pathlib
import sys
import urllib.request
import zipfile

from absl import app, flags

URL = ("https://github.com/Jakobovski/free-spoken-digit-dataset/archive/refs/tags/"
       "v1.0.10.zip")
EXPECTED_FILES = 3000

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "Folder that gets fsdd/recordings.", required=True)


def extract(archive: bytes, target: pathlib.Path) -> int:
    """Write every recordings/*.wav of the archive into `target`; returns how many."""
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        for name in z.namelist():
            parts = pathlib.PurePosixPath(name).parts
            if len(parts) >= 2 and parts[-2] == "recordings" and name.endswith(".wav"):
                (target / parts[-1]).write_bytes(z.read(name))
                count += 1
    return count


def main(argv: list[str]) -> None:
    del argv
    target = pathlib.Path(FLAGS.data_dir) / "fsdd" / "recordings"
    if target.is_dir() and len(list(target.glob("*.wav"))) >= EXPECTED_FILES:
        print(f"{target}: already complete")
        return
    with urllib.request.urlopen(URL) as r:  # noqa: S310 (a fixed https URL)
        archive = r.read()
    print(f"downloaded {len(archive)} bytes, SHA-256 {hashlib.sha256(archive).hexdigest()}")
    count = extract(archive, target)
    if count != EXPECTED_FILES:
        sys.exit(f"expected {EXPECTED_FILES} recordings in the archive, found {count}")
    print(f"{count} recordings in {target}")


if __name__ == "__main__":
    app.run(main)
