"""Two greps of this boot's kernel log typed one after the other at one prompt (measure37d 19:
`sudo dmesg | grep error`, then `sudo dmesg | grep -i NVRM`) are two excerpts of the one log
(api/unread.joined_greps), never two rival views refused with exit 2: each fault judged once,
no pass (the lines neither kept are not known)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
SESSION_19 = (
    "session__two-dmesg-greps-error-then-nvrm__xid-119-rpc-history-rminitadapter-0x62__a40-vm__zh-notes.txt"
)


def test_two_greps_of_one_log_are_read_as_one(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "session.txt", (REAL / SESSION_19).read_text(encoding="utf-8"))
    assert got["gpu_xid"][0] == "fail", got["gpu_xid"]
    assert "Xid 119" in got["gpu_xid"][1] and "RmInitAdapter" in got["gpu_xid"][1]
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    assert "grep" in got["nvswitch_sxid"][1]


def test_the_note_says_they_are_excerpts_of_one_log(tmp_path: Path) -> None:
    (tmp_path / "session.txt").write_text((REAL / SESSION_19).read_text(encoding="utf-8"))
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "session.txt")], notes)
    assert any("two excerpts of the kernel log of this boot" in n for n in notes), notes


def test_an_xid_in_both_greps_counts_once(tmp_path: Path) -> None:
    xid = "[ 2638.641516] NVRM: Xid (PCI:0000:03:00): 119, pid=32273, name=nvitop, Timeout waiting for RPC"
    text = f"$ sudo dmesg | grep Xid\n{xid}\n$ sudo dmesg | grep -i NVRM\n{xid}\n"
    got = verdicts(tmp_path, "session.txt", text)
    assert got["gpu_xid"][0] == "fail"
    assert "x2" not in got["gpu_xid"][1], got["gpu_xid"]
