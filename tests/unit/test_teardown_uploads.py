"""Which entries of the data dir are gpuonboard's uploads (removed by teardown) and which are
not (left, and named): the probe runs with this machine's sh over a real directory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpuonboard.steps.teardown import Uploads, classify_uploads, uploads_probe_command


def _probe(d: Path) -> str:
    return subprocess.run(["sh", "-c", uploads_probe_command(str(d))], capture_output=True, text=True).stdout


def test_uploads_are_told_from_the_users_entries(tmp_path: Path) -> None:
    disk = tmp_path / "data disk"
    for name in (
        "imagenet",  # the configured dataset's copy
        "imagenet.encrypted",
        "docs",  # a copy a decryption marked
        "docs.encrypted",
        "imgs.shards",  # a shard store (its manifest) ...
        "imgs",  # ... and its unpacked tree
        ".imgs.gpuonboard-unpack-0123abcd-0123456789ab",  # an interrupted unpack
        "runs-old",  # the user's
        "other.shards",  # no manifest: not a store gpuonboard made
        "lost+found",
        "two\nlines",
    ):
        (disk / name).mkdir(parents=True)
    (disk / "docs" / ".gpuonboard-copy").write_text(f"{disk}/docs\n")
    (disk / "imgs.shards" / "manifest.json").write_text("{}\n")
    (disk / "imgs.shards" / "manifest.unpacked.json").write_text("{}\n")  # (a tree was unpacked)
    # a job's `cp -a docs docs-resized` carries the mark, which names the original: not ours
    (disk / "docs-resized").mkdir()
    (disk / "docs-resized" / ".gpuonboard-copy").write_text(f"{disk}/docs\n")
    # a store nothing was unpacked from says nothing of the dir beside it
    (disk / "checkpoints").mkdir()
    (disk / "checkpoints.shards").mkdir()
    (disk / "checkpoints.shards" / "manifest.json").write_text("{}\n")
    (disk / ".imgs.gpuonboard-upload").write_text("token\n")  # a lease
    (disk / "notes.txt").write_text("mine\n")
    (disk / "imagenet.shards").symlink_to(disk / "runs-old")  # a link: never ours to judge
    found = classify_uploads(_probe(disk), "imagenet", skip={"results"})
    assert found == Uploads(
        str(disk),
        (
            ".imgs.gpuonboard-unpack-0123abcd-0123456789ab",
            ".imgs.gpuonboard-upload",
            "checkpoints.shards",
            "docs",
            "docs.encrypted",
            "imagenet",
            "imagenet.encrypted",
            "imgs",
            "imgs.shards",
        ),
        (
            "checkpoints",
            "docs-resized",
            "imagenet.shards",
            "notes.txt",
            "other.shards",
            "runs-old",
            "two\nlines",
        ),
    )
    # without a configured dataset its copy is the user's; a skipped name is neither
    found = classify_uploads(_probe(disk), "", skip={"runs-old"})
    assert found is not None and "imagenet" in found.others and "runs-old" not in found.others
    assert "imagenet" not in found.ours and "docs" in found.ours
    assert classify_uploads(_probe(tmp_path / "missing"), "imagenet") is None


def test_an_entry_another_user_owns_is_never_ours(tmp_path: Path) -> None:
    """Another user cannot make an entry this login owns: one they made, named as the
    dataset's copy or marked, stays."""
    if os.getuid() != 0:
        pytest.skip("needs root to give an entry to another user")
    disk = tmp_path / "disk"
    (disk / "imagenet").mkdir(parents=True)
    (disk / "imagenet.shards").mkdir()
    (disk / "imagenet.shards" / "manifest.json").write_text("{}\n")
    for p in (disk / "imagenet", disk / "imagenet.shards"):
        os.chown(p, 65534, 65534)
    found = classify_uploads(_probe(disk), "imagenet")
    assert found is not None and found.ours == () and found.others == ("imagenet", "imagenet.shards")


def test_a_lease_refreshed_within_a_minute_is_a_running_upload(tmp_path: Path) -> None:
    """An upload refreshes its lease every 15 s: one younger than uploadlock.STALE_S means an
    upload runs now, and removing its copy under it failed that upload (a rerun put it back)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    lease = disk / ".imgs.gpuonboard-upload"
    lease.write_text("token\n")
    found = classify_uploads(_probe(disk), "imgs")
    assert found is not None and found.live_leases == (".imgs.gpuonboard-upload",)
    os.utime(lease, (os.path.getmtime(lease) - 120,) * 2)
    found = classify_uploads(_probe(disk), "imgs")
    assert found is not None and found.live_leases == () and found.ours == (".imgs.gpuonboard-upload",)
