"""The pull's sha256 manifest is coreutils sha256sum's output, which escapes only a backslash and
a line feed in a name (and a carriage return, since 9.1): every other character stays as it is,
so a line ends at \\n alone. str.splitlines() also cut at \\v, \\f, \\x1c-\\x1e, U+0085, U+2028
and U+2029: results named so were `missing` on every rerun, and a pull that never verified kept
teardown from ever finishing. Real files, this machine's sha256sum (transfer.SUMS_SCRIPT)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from gpuonboard.steps.teardown.checks import unhashed
from gpuonboard.transfer import SUMS_SCRIPT, parse_manifest

ODD = [
    "e\u2028f",
    "c\x0bd",
    "p\x0cq",
    "fs\x1cgs\x1drs\x1e",
    "nel\x85",
    "par\u2029",
    "a\rb",
    "n\nl",
    "b\\s",
    "plain",
]


def test_every_name_sha256sum_prints_is_read_back(tmp_path: Path) -> None:
    for i, name in enumerate(ODD):
        (tmp_path / name).write_bytes(f"content {i}\n".encode())
    out = subprocess.run(["sh", "-c", SUMS_SCRIPT], cwd=tmp_path, capture_output=True, check=True).stdout
    got = parse_manifest(out.decode("utf-8", "surrogateescape"))
    want = {name: hashlib.sha256(f"content {i}\n".encode()).hexdigest() for i, name in enumerate(ODD)}
    assert got == want


def test_a_listed_file_without_a_sha256_is_not_verified() -> None:
    """A file the host listed but gave no sha256 of (gone before it was hashed, a name the sums
    did not carry) is never left out of the pull's check."""
    listing = ["f 5 1700000000.0 ./notes\u2028x", "f 3 1700000000.0 ./ok", "l 2 1700000000.0 ./link"]
    assert unhashed(listing, {"ok": "0" * 64}) == ["notes\u2028x"]
    assert unhashed(listing, {"ok": "0" * 64, "notes\u2028x": "1" * 64}) == []
