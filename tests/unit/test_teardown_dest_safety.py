"""The local copy's record and the mark of a pull are written through a new temp file, never
through a name planted there (a symlink to another file of this user), and a --dest another
user owns, or anyone may write, is refused: they could swap what the pull writes into."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuonboard.steps.teardown import RECORD, Owner, exposed_dest, mark_pulling


def test_a_planted_temp_name_is_never_written_through(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (dest / f"{RECORD}.{os.getpid()}.tmp").symlink_to(victim)
    assert mark_pulling(dest, Owner("h", "127.0.0.1", 22, "/data/runs", False)) is None
    assert victim.read_text() == "mine\n"
    assert (dest / RECORD).read_text().startswith("# gpuonboard-pulling ")
    assert not (dest / RECORD).is_symlink()


def test_a_dest_others_can_change_is_refused(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    assert exposed_dest(dest) is None  # (made by the pull, this user's)
    dest.mkdir()
    assert exposed_dest(dest) is None
    dest.chmod(0o1777)
    assert exposed_dest(dest) == "is writable by every user (mode 1777)"
    dest.chmod(0o755)
    if os.getuid() != 0:
        pytest.skip("needs root to give the dir to another user")
    os.chown(dest, 65534, 65534)
    assert exposed_dest(dest) == "belongs to another user (uid 65534)"


def test_a_copy_of_another_box_at_the_same_address_is_not_this_hosts(tmp_path: Path) -> None:
    """Rented addresses are reused: the mark and the record keep the host key, so a new box on
    the old one's address, port and results dir does not pull into (and overwrite) its copy."""
    from gpuonboard.inventory import Host
    from gpuonboard.steps.teardown import Record, foreign_dest, read_owner

    host = Host("gpu-1", "127.0.0.9", port=2222)
    dest = tmp_path / "dest"
    dest.mkdir()
    old = Owner("gpu-1", "127.0.0.9", 2222, "/data/runs", False, "SHA256:old-box")
    assert mark_pulling(dest, old) is None
    (dest / "ckpt.pt").write_bytes(b"the old box's")
    owner = read_owner(dest)
    assert owner is not None and owner.key == "SHA256:old-box"
    assert foreign_dest(dest, host, "/data/runs", "SHA256:old-box") is None  # (a rerun resumes)
    held = foreign_dest(dest, host, "/data/runs", "SHA256:new-box")
    assert held == "an unfinished pull of /data/runs from gpu-1 (127.0.0.9:2222)"
    # a record keeps it too; one written before keys were kept still counts (no key to compare)
    rec = Record("gpu-1", "127.0.0.9", 2222, "/data/runs", (), {}, "SHA256:old-box")
    again = Record.parse(rec.to_bytes())
    assert again is not None and again.key == "SHA256:old-box"
    assert not again.of(host, "/data/runs", "SHA256:new-box") and again.of(
        host, "/data/runs", "SHA256:old-box"
    )
    keyless = Record.parse(Record("gpu-1", "127.0.0.9", 2222, "/data/runs", (), {}).to_bytes())
    assert keyless is not None and keyless.of(host, "/data/runs", "SHA256:new-box")
