"""A saved file damaged by NUL bytes (round 32, truthleft5): its content, where it can be read,
is used rather than its name alone.

- A file whose text ends in a run of NUL bytes (the zero-filled tail a crash or a disk error
  leaves in a log being written) is read as the whole lines before them, an output cut short:
  a kernel log's Xid there fails `gpu_xid`, whatever the file's name; before, it was a binary
  file (a note) and, named `nvidia-smi-after-hang.txt`, left no gpu_xid row at all.
- A file with NUL bytes inside its text (a zeroed block, then text again) stays unread, but the
  kind its readable start shows is what its unread rows go by: a kernel log misnamed
  `nvidia-smi-*.txt` leaves gpu_xid unverified (before: no row, its name said nvidia-smi).

Real captures (tests/fixtures/real/SOURCES.md): the Dell XE9680's `dmesg -T` with an Xid 119 and
the 8 x H100 table; the NUL bytes are put in in-test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuonboard.api import offline

REAL = Path(__file__).parents[2] / "fixtures" / "real"
XID_119 = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"
H100 = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
ORDER = "gpu_count: 8\ngpu_model: H100\n"


def _rows(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes) -> dict[str, dict]:
    box = tmp_path / "box"
    box.mkdir()
    (box / "nvidia-smi.txt").write_text(H100.read_text())
    (box / name).write_bytes(data)
    offline.run([str(box)], None, as_json=True)
    return {r["name"]: r for r in json.loads(capsys.readouterr().out)["rules"]}


def _head() -> tuple[bytes, bytes]:
    """The log's lines to its Xid 119 record's end (its first KiB or so), and the rest."""
    data = XID_119.read_bytes()
    at = data.index(b"\n", 1000) + 1
    return data[:at], data[at:]


@pytest.mark.parametrize("name", ["dmesg.txt", "nvidia-smi-after-hang.txt", "box-42.log"])
def test_a_zero_filled_tail_leaves_the_lines_before_it_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    head, _ = _head()
    rows = _rows(tmp_path, capsys, name, head + b"\x00" * 4096)
    assert rows["gpu_xid"]["verdict"] == "fail", rows.get("gpu_xid")
    assert "Xid 119" in rows["gpu_xid"]["actual"]


def test_nul_bytes_inside_the_text_leave_it_unread_by_what_its_start_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head, rest = _head()
    name = "nvidia-smi-after-hang.txt"
    rows = _rows(tmp_path, capsys, name, head + b"\x00" * 512 + rest)
    assert rows["gpu_xid"]["verdict"] == "unverified", rows.get("gpu_xid")
    assert name in rows["gpu_xid"]["actual"]


def test_a_binary_with_no_output_before_its_nul_bytes_is_still_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(tmp_path, capsys, "nvidia-smi-core.bin", b"core dump\n" + b"\x00" * 4096)
    assert "gpu_xid" not in rows  # (its start says no kind, its name nvidia-smi's: no log's row)
