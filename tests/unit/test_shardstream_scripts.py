"""The host side of shard mode's closing command, run by a real `sh` on real files."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
from pathlib import Path

from gpuonboard import shardstream


def _finish(
    target: Path, last: tuple[str, str, str] | None, manifest: bytes
) -> subprocess.CompletedProcess[str]:
    cmd = shardstream.finish_command(str(target), "", "", False, "zstd", "unpacked-x", [], [], last)
    return subprocess.run(cmd, shell=True, input=gzip.compress(manifest), capture_output=True, timeout=30)


def test_closing_command_renames_the_last_shard_only_when_its_sha256_matches(tmp_path: Path) -> None:
    data = b"shard bytes" * 100
    sha = hashlib.sha256(data).hexdigest()
    (tmp_path / ".incoming-000002").write_bytes(data)
    (tmp_path / ".incoming-000002.sum").write_text(f"{sha}  -\n")
    r = _finish(tmp_path, (".incoming-000002", sha, f"{sha[:32]}.tar"), b'{"format": 3}\n')
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"{sha[:32]}.tar").read_bytes() == data
    assert (tmp_path / "manifest.json").read_bytes() == b'{"format": 3}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{sha[:32]}.tar", "manifest.json"]

    # what arrived is not what was sent: removed, no manifest written, a plain message
    other = tmp_path / "again"
    other.mkdir()
    (other / ".incoming-000005").write_bytes(data + b"!")
    (other / ".incoming-000005.sum").write_text(hashlib.sha256(data + b"!").hexdigest() + "  -\n")
    r = _finish(other, (".incoming-000005", sha, f"{sha[:32]}.tar"), b"{}\n")
    assert r.returncode == 3
    assert r.stderr.decode().strip() == f"sha256 mismatch on the host for {sha[:32]}.tar"
    assert list(other.iterdir()) == []
