"""The one temp-file-and-rename write (gpuonboard.atomicfile) and the files written with it:
journals, summary.json/reports, the shard cache's index and hash cache, ciphertexts."""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from gpuonboard import atomicfile
from gpuonboard.report import jsonfile
from gpuonboard.runner import journal
from gpuonboard.transfer import Entry, crypto, hashcache, shards


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_interrupted_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "index.json"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomicfile.replacing(target, mode=0o666) as f:
        f.write(b"half of the new")
        raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["index.json"]
    atomicfile.write_text(target, "new", mode=0o666, fsync=True)
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["index.json"]


def test_a_cache_save_never_writes_through_a_link_at_its_temp_name(tmp_path: Path) -> None:
    """The shard cache's saves wrote a fixed temp name (`index.tmp`, `hashes.tmp`), following a
    link found there: into whatever file it named."""
    victim = tmp_path / "victim"
    victim.write_text("mine")
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in ("index.tmp", "hashes.tmp"):
        (cache / name).symlink_to(victim)
    shards.Index(cache).save(set())
    hashcache.HashCache(cache).save([])
    assert victim.read_text() == "mine"
    assert (
        json.loads((cache / "index.json").read_text())
        == json.loads((cache / "hashes.json").read_text())
        == {}
    )


def test_each_file_keeps_its_mode(tmp_path: Path) -> None:
    """Private 0600 where it was: a journal (the box's host key), reports (a failed login's
    message), ciphertexts; a shard cache's files and a ciphertext's sha256 sidecar as open()
    makes one (0644 under umask 022, like the shards beside them)."""
    old = os.umask(0o022)
    try:
        journal.save(tmp_path / "state", journal.Journal("h1", "provision", "r1"))
        jsonfile.write_atomic(tmp_path / "out" / "summary.json", "{}\n")
        index = shards.Index(tmp_path / "cache")
        index.save(set())
        hashes = hashcache.HashCache(tmp_path / "cache")
        hashes.save([])
        enc = crypto.Encryption(recipients=(_pub(),))
        crypto.encrypt_file(b"manifest", tmp_path / "cache" / "m.age", enc)
        side = crypto.sidecar(tmp_path / "cache" / "m.age")
        crypto.note_sha256(tmp_path / "cache" / "m.age")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "state" / "h1__provision.json") == 0o600
    assert _mode(tmp_path / "out" / "summary.json") == 0o600
    assert _mode(tmp_path / "cache" / "m.age") == 0o600
    assert _mode(index.path) == _mode(hashes.path) == _mode(side) == 0o644
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        "hashes.json",
        "index.json",
        "m.age",
        "m.age.sha256",
    ]
    old = os.umask(0o077)
    try:
        hashes.save([])
    finally:
        os.umask(old)
    assert _mode(hashes.path) == 0o600  # (the umask still counts)


def _pub() -> str:
    import pyrage

    return str(pyrage.x25519.Identity.generate().to_public())


def test_a_report_that_cannot_be_renamed_raises_oserror_and_leaves_no_temp(tmp_path: Path) -> None:
    """summary.json's write removed no temp file when it failed (a half report left beside it)."""
    (tmp_path / "summary.json").mkdir()  # (the name taken by a directory: the rename fails)
    with pytest.raises(OSError) as err:
        jsonfile.write_atomic(tmp_path / "summary.json", "{}\n")
    assert err.value.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST)
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_journal_and_cache_failures_keep_their_oserror_and_leave_no_temp(tmp_path: Path) -> None:
    """The callers catch OSError by errno (dataset.py's LocalWriteError): it goes on as it was."""
    state = tmp_path / "state"
    (state / "h1__provision.json").mkdir(parents=True)
    with pytest.raises(OSError) as err:
        journal.save(state, journal.Journal("h1", "provision", "r1"))
    assert err.value.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST)
    assert [p.name for p in state.iterdir()] == ["h1__provision.json"]
    cache = tmp_path / "cache"
    (cache / "hashes.json").mkdir(parents=True)
    with pytest.raises(OSError):
        hashcache.HashCache(cache).save([])
    assert [p.name for p in cache.iterdir()] == ["hashes.json"]


def test_two_uploads_of_one_dataset_save_its_caches_at_once(tmp_path: Path) -> None:
    """Two hosts' uploads of the same local dataset share its cache dir (keyed by the dataset
    alone): their saves of hashes.json went through ONE temp name, `hashes.tmp`, so one
    renamed the other's half-written file into place and the other's rename then failed
    (ENOENT: in encrypted mode the upload stopped, blaming this machine's disk)."""
    cache = tmp_path / "cache"
    entries = {
        f"dir/file-{i:05d}.bin": Entry(f"dir/file-{i:05d}.bin", "f", i, i, f"{i:064x}", mtime_ns=i, ino=i)
        for i in range(4000)
    }
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def save_many() -> None:
        hashes = hashcache.HashCache(cache)
        for e in entries.values():
            hashes.put(e, e.sha256)
        start.wait()
        try:
            for _ in range(150):
                hashes.save(entries)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=save_many) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(json.loads((cache / "hashes.json").read_text())) == len(entries)
    assert [p.name for p in cache.iterdir()] == ["hashes.json"]


class _Counting(io.BytesIO):
    """A file in memory that keeps the size of each write."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def write(self, b: Any) -> int:
        self.calls.append(len(b))
        return super().write(b)


def test_a_large_file_is_written_whole_in_pieces_of_a_mebibyte(tmp_path: Path) -> None:
    """write_pieces hands each write at most atomicfile.PIECE bytes (a 13 MB report written in
    one call cost 13-171 ms of kernel CPU in half the runs on the project's VM, in 1 MiB pieces
    3-5 ms): the bytes are the same for every size, and write_text and the HTML report's
    write_with_sha write them so."""
    from gpuonboard.report.runs import sha256_bytes, write_with_sha

    piece = atomicfile.PIECE
    for size in (0, 1, piece - 1, piece, piece + 1, 3 * piece + 12345):
        data = os.urandom(size)
        f = _Counting()
        atomicfile.write_pieces(f, data)
        assert f.getvalue() == data and all(n <= piece for n in f.calls)
        assert len(f.calls) == max(1, -(-size // piece))
    text = "".join(f"<tr><td>{i}</td><td>\u00e9 \u4e2d \udcff</td></tr>\n" for i in range(120_000))
    atomicfile.write_text(tmp_path / "a.txt", text, errors="backslashreplace")
    encoded = text.encode("utf-8", "backslashreplace")
    assert len(encoded) > 3 * piece and (tmp_path / "a.txt").read_bytes() == encoded
    digest = write_with_sha(tmp_path / "report.html", text)
    assert (tmp_path / "report.html").read_bytes() == encoded and digest == sha256_bytes(encoded)


def test_a_report_written_in_pieces_is_the_bytes_of_its_joined_text(tmp_path: Path) -> None:
    """write_with_sha of a report's pieces (render.render_pieces: the HTML page's own pieces,
    each host's section one) writes and hashes the bytes of their join: the pieces encoded one
    after another (lone surrogates as their escapes, short pieces together, a piece longer than
    atomicfile.PIECE), and a live secret masked even where it spans two pieces."""
    from gpuonboard import masking
    from gpuonboard.report.runs import sha256_bytes, write_with_sha

    section = "".join(f"<tr><td>{i}</td><td>\u00e9 \u4e2d \udcff &amp;</td></tr>\n" for i in range(9_000))
    long = "a" * (atomicfile.PIECE + 7)
    pieces = ["<!DOCTYPE html>", "<p>", "\udce9", "</p>\n", *[section] * 5, long, "end\n"]
    joined = "".join(pieces).encode("utf-8", "backslashreplace")
    digest = write_with_sha(tmp_path / "r.html", pieces)
    assert (tmp_path / "r.html").read_bytes() == joined and digest == sha256_bytes(joined)
    assert (tmp_path / "r.html.sha256").read_text() == f"{digest}  r.html\n"
    secret = masking.Secret("tok-4f2b9c")
    pieces = ["<p>a tok-", "4f2b9c b</p>\n", section, "tok-4f2b9c\n"]
    whole = masking.mask_written("".join(pieces)).encode("utf-8", "backslashreplace")
    digest = write_with_sha(tmp_path / "s.html", pieces)
    assert (tmp_path / "s.html").read_bytes() == whole and digest == sha256_bytes(whole)
    assert b"tok-" not in whole and whole.count(masking.MASK.encode()) == 2
    del secret
