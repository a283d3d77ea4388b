"""Kernel log sweep, round 38 (measure38c; tests/fixtures/real/SOURCES.md): saved kernel logs that
are excerpts passed the absence rules.

m38c 16: an author's excerpt around a driver reload (a GPU fallen off the bus, then the driver's
load banner at 14387 s): the reload's banner was taken for the boot's, and nvswitch_sxid passed.
m38c 12: a syslog quoted as lines picked from four boots, each break a `-bk-` line: nvswitch_sxid
passed. m38c 01: one AER event's four lines, stamped within one second: gpu_xid and nvswitch_sxid
passed, while the same lines unstamped are refused as a grep (facts/kernel_kinds.py: one rule)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.facts.elision import ELISION, elided_line, hand_break
from gpuonboard.facts.kernel_kinds import picked_kinds
from gpuonboard.facts.kernel_log import parse_kernel_log

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
RELOAD_16 = "dmesg__h100-driver-reload-banner-14387s-after-fallen-off-bus-gsp-fw-x7__zh-k8s-notes.txt"
# (the same notes' syslog of the same reload, 17257 s, with the NVSwitch driver's probe lines)
RELOAD_SYSLOG = "dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt"
# (a VM's excerpt around a reload at 83260 s: two GPUs given no BAR)
RELOAD_BAR = "dmesg__bar1-invalid-probe-failed-2-gpus-vm__driver510.108.03__gpu-operator-492.txt"
BREAKS_12 = "syslog__bk-break-lines-4-boots-xid69-last-boot-banner-only__ubuntuforums-vaio.txt"
AER_01 = "journal-syslog__aer-corrected-one-event-4-lines-1-kind-within-1s__nbfc-181.txt"
# (pop-os/pop#3363 comment 15: two AER events' 8 lines 22 ms apart, 19 h into boot)
AER_POP = "dmesg-syslog__aer-correctable-bracketed-68183s-no-nvrm__pop-3363.txt"
HGX = "gpu_model: H100 80GB HBM3\ngpu_count: 8\n"
ONE = "gpu_count: 1\n"


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def _restamped(text: str, seconds: float) -> str:
    """`text` with every `[ N.NNNNNN]` stamp moved so that its first is at `seconds`."""
    stamps = [float(s) for s in re.findall(r"\[\s*(\d+\.\d+)\]", text)]
    shift = seconds - stamps[0]
    return re.sub(r"\[\s*(\d+\.\d+)\]", lambda m: f"[{float(m.group(1)) + shift:12.6f}]", text)


def test_a_reload_banner_hours_into_boot_is_no_boot_load(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "dmesg.txt", read(RELOAD_16), HGX)
    assert got["gpu_xid"][0] == "fail" and "0000:5d:00.0" in got["gpu_xid"][1]
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    assert "without the driver's load banner at boot" in got["nvswitch_sxid"][1]
    assert "starts after boot" in got["nvswitch_sxid"][1]


def test_the_same_excerpt_at_boot_is_a_reload_unless_the_modules_load_starts_it(tmp_path: Path) -> None:
    """The lines as early as 3.2 s are still a reload's: the banner follows the fallen GPU's lines
    (revK F1: the stamps are no evidence); with the kernel's taint note for the module above them
    the grep starts at the boot's load, and the banner is the boot's."""
    early = _restamped(read(RELOAD_16), 3.2)
    got = verdicts(tmp_path, "dmesg.txt", early, HGX)
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    assert "load banner at boot" in got["nvswitch_sxid"][1]
    loaded = "[    3.100000] nvidia: loading out-of-tree module taints kernel.\n" + early
    got = verdicts(tmp_path, "dmesg.txt", loaded, HGX)
    assert got["nvswitch_sxid"][0] == "pass", got["nvswitch_sxid"]
    assert "starts after boot" not in got["nvswitch_sxid"][1]


def test_other_reload_excerpts_are_no_pass_without_their_caveat(tmp_path: Path) -> None:
    bar = verdicts(tmp_path, "dmesg.txt", read(RELOAD_BAR), HGX)
    assert bar["nvswitch_sxid"][0] == "unverified", bar["nvswitch_sxid"]
    # (the NVSwitch driver's lines in it: no excerpt of the GPU driver's alone, but it starts
    # 17256 s into boot, where no grep of a whole boot's driver lines starts)
    syslog = verdicts(tmp_path, "syslog.txt", read(RELOAD_SYSLOG), HGX)
    assert syslog["nvswitch_sxid"][0] == "pass", syslog["nvswitch_sxid"]
    assert "starts after boot" in syslog["nvswitch_sxid"][1], syslog["nvswitch_sxid"]


def test_break_lines_leave_the_quoted_syslog_unverified(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "syslog.txt", read(BREAKS_12), ONE)
    assert got["nvswitch_sxid"][0] == "unverified", got["nvswitch_sxid"]
    assert "marked `-bk-`" in got["nvswitch_sxid"][1]
    assert "Xid 69" in got["gpu_xid"][1] and got["gpu_xid"][0] != "pass"


@pytest.mark.parametrize(
    "marker",
    [
        *("--", "--bk--", "-break-", "<snip>", "[...]", "----", "***", "* * *", "=====", "(break)"),
        *("[break]", "<bk>", "-bk", "bk", "/bk/", "\u2014bk\u2014", "\u2013bk\u2013", "[cut]"),
    ],
)
def test_any_break_line_in_its_place_does_too(tmp_path: Path, marker: str) -> None:
    text = read(BREAKS_12).replace("\n-bk-\n", f"\n{marker}\n")
    got = verdicts(tmp_path, "syslog.txt", text, ONE)
    assert got["nvswitch_sxid"][0] == "unverified", (marker, got["nvswitch_sxid"])
    assert f"marked `{marker}`" in got["nvswitch_sxid"][1]


def test_break_lines_are_apart_from_hand_elisions() -> None:
    """A paste's `[...]` says lines were left out anywhere; a break line (grep's `--`, a poster's
    `-bk-`) only between kept lines (facts/kernel_log._elided)."""
    assert ELISION.match("[...]") and not hand_break("[...]")
    for line in ("--", "  --  ", "-bk-", " --bk-- ", "---", "bk", "(break)"):
        assert hand_break(line) and elided_line(line) and ELISION.match(line) is None, line
    for line in ("-- Reboot --", "-b-", "------------[ cut here ]------------ x", "cut here"):
        assert not hand_break(line), line


def test_one_aer_event_within_a_second_is_picked_as_its_unstamped_lines_are(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "journal.txt", read(AER_01), ONE)
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert got[rule][0] == "unverified", got[rule]
        assert "1 kind only (`pcieport`) within 1 s" in got[rule][1]
    bare = "".join(line.split("kernel: ", 1)[1] + "\n" for line in read(AER_01).splitlines())
    with pytest.raises(UsageError, match=r"1 kind only \(`pcieport`\)"):
        verdicts(tmp_path, "journal.txt", bare, ONE)


def test_the_older_aer_burst_is_picked_too(tmp_path: Path) -> None:
    """pop-os/pop#3363's two AER events 22 ms apart passed as a window of the log (m32d 3)."""
    assert picked_kinds(read(AER_POP).splitlines()) is not None
    got = verdicts(tmp_path, "dmesg.txt", read(AER_POP), ONE)
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert got[rule][0] == "unverified", got[rule]
        assert "1 kind only (`pcieport`)" in got[rule][1]


def test_a_driver_grep_late_in_boot_starts_after_boot_unless_at_the_drivers_load() -> None:
    """A grep of a whole boot's driver lines starts with the driver's load: its first line late
    in boot and no module's load says the log starts after boot; a late banner first is where the
    driver loaded (a GPU's driver loaded on demand), all it logged. (A `grep NVRM`'s lines alone
    are left as read: kernel_log._boot_first.)"""
    late = "[ 1399.140318] nvidia 0000:01:00.0: irq 47 for MSI/MSI-X\n"
    late += "[ 1399.2] NVRM: Xid (PCI:0000:01:00): 13, x\n"
    assert parse_kernel_log(late).covers_boot is False
    assert parse_kernel_log(_restamped(late, 4.0)).covers_boot is None
    banner = "[  150.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  525.125.06\n" + late
    assert parse_kernel_log(_restamped(banner, 150.1)).covers_boot is None
