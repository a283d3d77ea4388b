"""One kernel report printed twice in one text, a journal's line and dmesg's (facts/kernel_forms.py;
measure37d 15/16: a grep of nvidia-bug-report.log holds its journal section's Xid 79 line and its
dmesg section's: "Xid 79 GPU has fallen off the bus x2" of one event)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.kernel_log import parse_kernel_log

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
GREP_15 = (
    "dmesg-bug-report-grep__xid-79-fallen-off-bus-journal-zh-month-then-dmesg-same-event__4x-rtx4090-blog.txt"
)
XID = "NVRM: Xid (PCI:0000:c2:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def test_the_bug_reports_journal_and_dmesg_lines_are_one_event(tmp_path: Path) -> None:
    text = (REAL / GREP_15).read_text(encoding="utf-8")
    log = parse_kernel_log(text)
    assert [(e.kind, e.code) for e in log.xids()] == [("xid", 79)]
    assert len(log.nvrm_faults()) == 1
    got = verdicts(tmp_path, "bugreport-grep.txt", text)
    assert got["gpu_xid"][0] == "fail"
    assert "x2" not in got["gpu_xid"][1], got["gpu_xid"]


def test_a_fault_repeated_in_one_form_still_counts_each_time() -> None:
    journal = [f"Jun 28 02:52:5{i} host kernel: {XID}" for i in range(3)]
    dmesg = [f"[1590188.78922{i}] {XID}" for i in range(3)]
    assert len(parse_kernel_log("\n".join(journal) + "\n").xids()) == 3
    assert len(parse_kernel_log("\n".join(dmesg) + "\n").xids()) == 3
    # (three in the journal and one in dmesg: three events, the dmesg one among them)
    assert len(parse_kernel_log("\n".join([*journal, dmesg[0]]) + "\n").xids()) == 3
    # (another address or other words: another event)
    other = dmesg[0].replace("c2:00", "c1:00")
    assert len(parse_kernel_log("\n".join([journal[0], other]) + "\n").xids()) == 2
