"""Whose copy a local dir is: the record of a verified pull or the mark of one in progress; a dir
holding anything else is not pulled into (rsync would replace its files of the same names)."""

from __future__ import annotations

import resource
import signal
from pathlib import Path

from gpuonboard.inventory import Host
from gpuonboard.steps.teardown import (
    PARTIAL_DIR,
    RECORD,
    Owner,
    Record,
    foreign_dest,
    mark_pulling,
    read_owner,
    read_record,
    write_record,
)

HOST = Host(name="h1", address="10.0.0.9", port=2222)


def test_an_empty_or_missing_dest_or_our_own_copy_is_pulled_into(tmp_path: Path) -> None:
    assert foreign_dest(tmp_path / "missing", HOST, "/data/run") is None
    assert foreign_dest(tmp_path, HOST, "/data/run") is None
    (tmp_path / PARTIAL_DIR).mkdir()  # rsync's partial dir alone
    assert foreign_dest(tmp_path, HOST, "/data/run") is None
    (tmp_path / "notes.txt").write_text("mine\n")
    assert foreign_dest(tmp_path, HOST, "/data/run") == (
        "1 entry no pull of /data/run from it put there (first: notes.txt)"
    )
    assert mark_pulling(tmp_path, Owner("h1", "10.0.0.9", 2222, "/data/run", False)) is None
    assert foreign_dest(tmp_path, HOST, "/data/run") is None  # an interrupted pull of it: resumed
    assert read_record(tmp_path) is None  # the mark is no record
    assert foreign_dest(tmp_path, HOST, "/data/run2") == (
        "an unfinished pull of /data/run from h1 (10.0.0.9:2222)"
    )
    rec = Record("h1", "10.0.0.9", 2222, "/data/run", ("f 1 2.0 ./a.txt",), {"a.txt": "a" * 64})
    assert write_record(tmp_path, rec) is None
    assert read_owner(tmp_path) == Owner("h1", "10.0.0.9", 2222, "/data/run", True)
    assert foreign_dest(tmp_path, HOST, "/data/run") is None
    other = Host(name="h1", address="10.0.0.10", port=2222)  # the name reused for another rental
    assert foreign_dest(tmp_path, other, "/data/run") == (
        "the verified copy of /data/run from h1 (10.0.0.9:2222)"
    )


def test_a_record_that_cannot_be_written_keeps_the_mark_of_the_pull(tmp_path: Path) -> None:
    owner = Owner("h1", "10.0.0.9", 2222, "/data/run", False)
    assert mark_pulling(tmp_path, owner) is None
    rec = Record("h1", "10.0.0.9", 2222, "/data/run", (), {})
    # a write that fails half-way (here: the file size limit, EFBIG; as a full disk would)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16, old_limit[1]))
    try:
        failed = write_record(tmp_path, rec)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert failed == "File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == [RECORD]  # (no temp file left)
    assert read_owner(tmp_path) == owner and read_record(tmp_path) is None
