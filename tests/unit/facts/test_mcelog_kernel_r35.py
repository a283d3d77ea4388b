"""mcelog's records are host_hw_errors' evidence only: given as the only "kernel log", gpu_xid and
nvswitch_sxid stay unverified (no Xid / SXid line can be in them); beside a real kernel log, the
kernel log decides them (review revP F6)."""

from __future__ import annotations

from pathlib import Path

import pytest

REAL = Path(__file__).parents[2] / "fixtures" / "real"
MCELOGS = sorted(p.name for p in REAL.glob("mcelog__*.txt"))
MCE_LOGGED = REAL / "dmesg-syslog__mce-events-logged-no-record__haswell-yoda-ubuntuforums.txt"
XID79 = "[ 9737.112233] NVRM: Xid (PCI:0000:c2:00): 79, pid=4021, GPU has fallen off the bus.\n"


@pytest.mark.parametrize("name", MCELOGS)
def test_mcelog_alone_says_nothing_of_xids(tmp_path: Path, name: str) -> None:
    """Every real mcelog output alone: gpu_xid / nvswitch_sxid passed "no Xid in the kernel log"."""
    from ..offline_judge import verdicts

    judged = verdicts(tmp_path, "mcelog.txt", (REAL / name).read_text())
    for rule, what in (("gpu_xid", "Xid"), ("nvswitch_sxid", "SXid")):
        verdict, actual = judged[rule]
        assert verdict == "unverified", (rule, actual)
        assert f"no kernel log given: mcelog's records of machine checks hold no {what}" in actual
    assert judged["host_hw_errors"][0] in ("fail", "warn")


def test_mcelog_beside_a_kernel_log_leaves_xids_to_the_kernel_log(tmp_path: Path) -> None:
    from ..offline_judge import judged_box

    mcelog = (REAL / MCELOGS[0]).read_text()
    files = {"syslog.txt": MCE_LOGGED.read_text(), "mcelog.txt": mcelog}
    _, clean = judged_box(tmp_path / "a", files, "gpu_count: 1\n")
    # (round 38: the forum's two syslog lines, `init:` and `mce:` 163 s apart, are lines of 2 kinds
    # picked from the log: no pass of the whole boot, judged by the log, not by mcelog)
    assert clean["gpu_xid"].verdict == "unverified"
    assert "picked from the log" in clean["gpu_xid"].actual, clean["gpu_xid"].actual
    files = {"dmesg.txt": MCE_LOGGED.read_text() + XID79, "mcelog.txt": mcelog}
    _, faulty = judged_box(tmp_path / "b", files, "gpu_count: 1\n")
    assert faulty["gpu_xid"].verdict == "fail"
