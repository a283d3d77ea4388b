"""Kernel log sweep, round 37 (measure37d; tests/fixtures/real/SOURCES.md): a saved log whose
kernel lines are of a few kinds is lines picked from the log (facts/kernel_kinds.py), whatever
prefix each line carries.

m37d 05: 11 unstamped AER lines of 2 kinds with a syslog `kernel: ` prefix passed gpu_xid and
nvswitch_sxid ("the log read starts after boot"), while the same lines without it are refused.
m37d 13: a `guest dmesg:` label before a guest's NVRM lines, under a tool's `cuInit failed` line:
nvswitch_sxid passed with no caveat. m37d 08: two `pcieport` lines 4 hours apart passed gpu_xid.
Round 38 (m38c 01): lines of a few kinds stamped seconds apart are picked too (test_kernel_excerpts_r38)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.facts.kernel_kinds import PICKED_GAP_S, picked_kinds

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
KB_05 = "dmesg-syslog__kernel-prefix-no-stamps-aer-2-kinds-pcieport-pci__redhat-7128107.txt"
FLOOD_08 = "dmesg-syslog__aer-1-kind-pcieport-4h-apart-wrapped-line__deltaops-medium.txt"
GUEST_13 = "dmesg__guest-dmesg-label-wpr2-rminitadapter-0x62-under-cuinit-line__kayfabe-notes.txt"
BURST = "dmesg-syslog__aer-correctable-bracketed-68183s-no-nvrm__pop-3363.txt"
# (syslogd's wall messages: only the kernel's emergency lines, the machine check's, are broadcast)
WALL = "syslogd-wall__amd-mc4-dram-ecc-corrected-over__cut-at-end__ucr-cs100-404.txt"


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


# every prefix without a time a log line can carry before the kernel's message
PREFIXES = ["kernel: ", "gpu-node kernel: ", "guest dmesg: ", "dmesg: ", ""]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_few_kinds_of_aer_lines_with_any_prefix_are_never_a_pass(tmp_path: Path, prefix: str) -> None:
    """Unverified, or refused as the bare lines are (m37d 06: "of 2 kinds only"): never a pass."""
    lines = [line.split("kernel: ", 1)[1] for line in read(KB_05).splitlines()]
    try:
        got = verdicts(tmp_path, "dmesg.txt", "".join(prefix + line + "\n" for line in lines))
    except UsageError as e:
        assert prefix in ("", "guest dmesg: ", "dmesg: "), e
        return
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert got[rule][0] == "unverified", (prefix, got[rule])
        assert "2 kinds only (`pcieport`, `pci`)" in got[rule][1]


@pytest.mark.parametrize("prefix", ["Jun 15 {t} gpu-node kernel: ", "[Mon Jun 15 {t} 2026] ", "[{s}] "])
def test_stamped_lines_of_a_few_kinds_are_judged_by_their_gaps_whatever_the_prefix(
    tmp_path: Path, prefix: str
) -> None:
    lines = [line.split("kernel: ", 1)[1] for line in read(KB_05).splitlines()]
    # (round 38: a burst seconds apart is picked too, as its lines unstamped are; its words say so)
    for hours, said in ((0, "within 10 s"), (2, "and 2.0 h apart")):
        text = ""
        for i, line in enumerate(lines):  # (the last line `hours` after the others)
            late = hours if i == len(lines) - 1 else 0
            t, s = f"{11 + late:02d}:38:{i:02d}", f"{5000 + late * 3600 + i}.000001"
            text += prefix.format(t=t, s=s) + line + "\n"
        got = verdicts(tmp_path, "dmesg.txt", text)
        for rule in ("gpu_xid", "nvswitch_sxid"):
            assert got[rule][0] == "unverified", (prefix, hours, got[rule])
            assert f"2 kinds only (`pcieport`, `pci`) {said}" in got[rule][1], (prefix, hours, got[rule])


def test_the_kb_example_is_no_pass_and_its_host_error_still_fails(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "journal.txt", read(KB_05))
    assert got["gpu_xid"][0] == "unverified", got["gpu_xid"]
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    assert "carry no time stamps" in got["gpu_xid"][1]
    assert got["host_hw_errors"][0] == "fail"


def test_the_guest_dmesg_label_quote_is_no_sxid_pass(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "dmesg.txt", read(GUEST_13))
    assert got["gpu_xid"][0] == "fail"  # (RmInitAdapter failed: judged from the driver's lines)
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    assert "1 kind only (`NVRM`)" in got["nvswitch_sxid"][1]


def test_one_kind_of_line_hours_apart_is_a_selection(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "syslog.txt", read(FLOOD_08))
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert got[rule][0] == "unverified", got[rule]
        assert "4.0 h apart" in got[rule][1]


def test_a_burst_of_one_kind_seconds_apart_is_picked_too(tmp_path: Path) -> None:
    """(round 38, m38c 01) an AER flood 22 ms apart (m32d 3): a grep keeps the stamps, so they
    never tell it from the log; it passed "no Xid" as a window of the log."""
    got_kinds = picked_kinds(read(BURST).splitlines())
    assert got_kinds is not None and got_kinds.why == "within 1 s"
    got = verdicts(tmp_path, "dmesg.txt", read(BURST))
    assert got["gpu_xid"][0] == "unverified" and "1 kind only (`pcieport`) within 1 s" in got["gpu_xid"][1]


def test_the_gap_is_between_lines_one_after_the_other() -> None:
    head = "Jun 15 11:38:52 x99 kernel: pcieport 0000:00:03.0: AER: Corrected error received"
    lines = [head, head.replace("11:38:52", "11:38:53"), head.replace("11:38:52", "12:38:53")]
    got = picked_kinds(lines)
    assert got is not None and "1.0 h apart" in got.why
    assert PICKED_GAP_S == 3600.0
    burst = picked_kinds(lines[:2])  # (one second apart: picked, said so)
    assert burst is not None and burst.why == "within 1 s"


def test_three_kinds_or_a_journal_window_are_no_selection() -> None:
    kinds = ["pcieport 0000:00:03.0: AER: x", "nvme nvme0: y", "usb 1-1: z"]
    assert picked_kinds([f"kernel: {k}" for k in kinds]) is None
    # (another program's line: a journal window holds every line of its span)
    window = ["Jun 15 11:38:52 x99 kernel: pcieport 0000:00:03.0: AER: x", "Jun 15 15:38:52 x99 sshd[12]: y"]
    assert picked_kinds(window) is None


def test_a_selection_of_a_drivers_lines_is_judged_by_that_drivers_rule() -> None:
    got = picked_kinds(["kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus"])
    assert got is not None
    assert got.for_xid() == ""  # (a grep of NVRM keeps every Xid line)
    assert "picked from the log" in got.for_sxid()
    switch = picked_kinds(["kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, x"])
    assert switch is not None and switch.for_sxid() == "" and switch.for_xid()


def test_syslogds_wall_messages_of_the_machine_check_are_a_selection(tmp_path: Path) -> None:
    """ucr-cs100-404: `Message from syslogd@hammer ...` / ` kernel:[Hardware Error]: ...`, the
    kernel lines syslogd broadcast to the terminals (emergency ones only): no Xid among them
    proves nothing (it passed gpu_xid and nvswitch_sxid)."""
    got = verdicts(tmp_path, "messages.txt", read(WALL))
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert got[rule][0] == "unverified", got[rule]
        assert "1 kind only (`[Hardware Error]`)" in got[rule][1]
