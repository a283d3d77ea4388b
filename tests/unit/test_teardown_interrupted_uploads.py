"""What an interrupted or encrypted upload left in the data dir: the probe runs with this
machine's sh over a real directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpuonboard.steps.teardown import classify_uploads, plaintext_note, uploads_probe_command


def _probe(d: Path) -> str:
    return subprocess.run(["sh", "-c", uploads_probe_command(str(d))], capture_output=True, text=True).stdout


def test_a_shard_store_an_interrupted_upload_left_is_gpuonboards(tmp_path: Path) -> None:
    """A `--shards` upload killed before its closing command leaves `X.shards` with no manifest,
    only `.incoming-N` (and its `.sum`, and the shards already named): teardown removed its lease
    but left the half-sent store, saying it could not tell it for an upload."""
    disk = tmp_path / "data"
    killed = disk / "big.shards"
    killed.mkdir(parents=True)
    (killed / ".incoming-000001").write_bytes(b"x" * 100)
    (killed / ".incoming-000001.sum").write_text("0" * 64 + "\n")
    (killed / ("ab" * 16 + ".tar.zst.age")).write_bytes(b"age")
    (disk / ".big.gpuonboard-upload").write_text("token\n")
    job = disk / "mine.shards"  # the same shape, plus a file no upload writes: the user's
    job.mkdir()
    (job / ".incoming-000000").write_bytes(b"x")
    (job / "notes.txt").write_text("mine\n")
    (disk / "empty.shards").mkdir()  # nothing in it says an upload made it
    found = classify_uploads(_probe(disk), "")
    assert found is not None
    assert found.ours == (".big.gpuonboard-upload", "big.shards")
    assert found.others == ("empty.shards", "mine.shards")
    assert found.ciphertexts == ("big.shards",)


def test_the_plaintext_of_encrypted_uploads_is_named_as_left(tmp_path: Path) -> None:
    """`sync --decrypt-on-host --decrypt-to /dev/shm` puts the plaintext outside the data dir,
    where teardown never looks: its message said nothing of it."""
    disk = tmp_path / "data"
    (disk / "corpus.encrypted").mkdir(parents=True)
    (disk / "imgs.shards").mkdir()
    (disk / "imgs.shards" / "manifest.json").write_text("{}\n")
    (disk / "imgs.shards" / ("cd" * 16 + ".tar.zst.age")).write_bytes(b"age")
    (disk / "plain.shards").mkdir()
    (disk / "plain.shards" / "manifest.json").write_text("{}\n")
    (disk / "plain.shards" / ("ef" * 16 + ".tar.zst")).write_bytes(b"tar")
    found = classify_uploads(_probe(disk), "")
    assert found is not None and found.ciphertexts == ("corpus.encrypted", "imgs.shards")
    note = plaintext_note(str(disk), found.ciphertexts)
    assert f"held age ciphertexts ({disk}/corpus.encrypted, {disk}/imgs.shards)" in note
    assert "--decrypt-to DIR` put in DIR/<name> is not looked for and stays on the host" in note
    assert plaintext_note(str(disk), ()) == ""
