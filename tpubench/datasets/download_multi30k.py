"""Download Multi30k task 1 (English-German captions) from its public source, checksum-verified.

    python -m workloads.transformer.download_multi30k --data_dir=DIR   # the documented command
    python -m tpubench.datasets.download_multi30k --data_dir=DIR       # the same

writes DIR/multi30k/{train,val,test_2016_flickr}.{de,en}.gz (1.3 MB), fetched from the GitHub
repository multi30k/dataset at a fixed commit. Each file's SHA-256 is checked before it is moved
into place; a file already present with the right checksum is kept. A download that fails
(offline, a proxy, a moved URL) removes its partial file and says in one line what failed and
how to place the files by hand; `--base_url` fetches from a mirror instead. Terms:
non-commercial research and education use.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import sys
import tempfile
import urllib.error
import urllib.request

from absl import app, flags

COMMIT = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
BASE_URL = f"https://raw.githubusercontent.com/multi30k/dataset/{COMMIT}/data/task1/raw/"
SHA256 = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
}


class ChecksumError(ValueError):
    """A file's SHA-256 is not the published one."""


class DownloadError(OSError):
    """A file could not be fetched; the message says which, from where, and what to do."""


def sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify(path: str | os.PathLike, name: str | None = None) -> None:
    """`ChecksumError` unless `path` has the checksum of Multi30k file `name` (default: its
    own file name)."""
    name = name or pathlib.Path(path).name
    got = sha256(path)
    if got != SHA256[name]:
        raise ChecksumError(f"{path}: SHA-256 {got} does not match {name}'s {SHA256[name]}.")


def verify_dir(directory: str | os.PathLike) -> list[str]:
    """Verify every Multi30k file in `directory`; returns the verified names."""
    for name in SHA256:
        verify(pathlib.Path(directory) / name, name)
    return list(SHA256)


def download(data_dir: str | os.PathLike, base_url: str = BASE_URL) -> pathlib.Path:
    """Fetch the six files into `data_dir/multi30k/` (verified before they are kept)."""
    target = pathlib.Path(data_dir) / "multi30k"
    created = not target.exists()
    target.mkdir(parents=True, exist_ok=True)
    try:
        _fetch_all(target, base_url)
    except (ChecksumError, DownloadError):
        if created and not any(target.iterdir()):
            target.rmdir()  # leave no empty directory behind that looks like a download
        raise
    return target


def _fetch_all(target: pathlib.Path, base_url: str) -> None:
    for name in SHA256:
        final = target / name
        if final.exists():
            try:
                verify(final, name)
                continue
            except ChecksumError:
                pass  # a stale or partial copy: fetch it again
        url = base_url + name
        with tempfile.NamedTemporaryFile(dir=target, delete=False) as tmp:
            try:
                with urllib.request.urlopen(url, timeout=60) as response:
                    tmp.write(response.read())
            except (urllib.error.URLError, OSError, ValueError) as e:  # ValueError: a bad URL
                tmp.close()
                os.unlink(tmp.name)  # no partial file is left in the data directory
                reason = getattr(e, "reason", None) or e
                raise DownloadError(
                    f"could not fetch {url} ({reason}); nothing partial was kept. Download the "
                    f"six files {', '.join(SHA256)} from {base_url} (or a mirror: --base_url) "
                    f"on a machine with network and place them in {target}/; they are checked "
                    "by SHA-256 when used.") from None
        try:
            verify(tmp.name, name)
        except ChecksumError:
            os.unlink(tmp.name)
            raise
        os.replace(tmp.name, final)
        print(f"{final}: ok")


def main(argv: list[str]) -> None:
    """absl main: download into --data_dir; exit status 1, one line on stderr, on a failed
    download or a checksum mismatch."""
    del argv
    try:
        print(f"Multi30k is in {download(flags.FLAGS.data_dir, flags.FLAGS.base_url)}")
    except (ChecksumError, DownloadError) as e:
        print(f"download_multi30k: error: {e}", file=sys.stderr)
        sys.exit(1)


def run() -> None:
    """The command line: define --data_dir and run `main` under absl."""
    flags.DEFINE_string("data_dir", None, "Directory to download into (files go to DIR/multi30k).")
    flags.DEFINE_string("base_url", BASE_URL, "Where the six files are (a mirror's URL, ending "
                        "in /).")
    flags.mark_flag_as_required("data_dir")
    app.run(main)


if __name__ == "__main__":
    run()
