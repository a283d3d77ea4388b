"""A folder's file that cannot be read (a damaged gzip) beside outputs that are: what it could
have shown is unverified by name, in the table and in --json, never a silent pass (review revB
F4: a damaged `dmesg.txt.gz` holding a real Xid beside a whole `-q -x` passed every row, with no
gpu_xid row at all)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpuonboard.api import offline

REAL = Path(__file__).parents[2] / "fixtures" / "real"
XID = REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt"
H200 = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"


def _damaged(text: str) -> bytes:
    """`text` gzipped, with bytes in the middle of its deflate stream flipped."""
    data = bytearray(gzip.compress(text.encode(), mtime=0))
    for at in range(len(data) // 2, len(data) // 2 + 8):
        data[at] ^= 0xFF
    return bytes(data)


def _facts_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> tuple[int, dict]:
    box = tmp_path / "box"
    box.mkdir()
    (box / "smi.xml").write_text(H200.read_text())
    (box / name).write_bytes(_damaged(XID.read_text()))
    rc = offline.run([str(box)], None, as_json=True)
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["dmesg.txt.gz", "kern.log.gz", "box-42.log.gz"])
def test_an_unread_kernel_log_leaves_the_xid_rules_unverified_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The damaged file named as a kernel log, or by a name that says no kind: gpu_xid and
    nvswitch_sxid unverified naming it (no row before), and its note in --json."""
    rc, doc = _facts_json(tmp_path, capsys, name)
    rows = {r["name"]: r for r in doc["rules"]}
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert rows[rule]["verdict"] == "unverified", rows.get(rule)
        assert name in rows[rule]["actual"], rows[rule]
    assert any(name in note and "damaged gzip" in note for note in doc["notes"]), doc.get("notes")
    assert rc == 0


def test_an_unread_file_named_as_another_kind_adds_no_kernel_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged `lscpu.txt.gz` could hold no kernel log: no Xid row is added, its note is in --json."""
    _, doc = _facts_json(tmp_path, capsys, "lscpu.txt.gz")
    assert "gpu_xid" not in {r["name"] for r in doc["rules"]}
    assert any("lscpu.txt.gz" in note for note in doc["notes"])
