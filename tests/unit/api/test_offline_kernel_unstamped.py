"""A kernel log printed without stamps (printk.time off, `dmesg -t`) is read as a kernel log where
its lines are the kernel's own by their shape (saved_kinds._KERNEL_SHAPE: a driver's line about a
PCI device, a SCSI device's, the boot banner ...), several of them; one such word is no log.
Real capture: insights-core's MSGINFO (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.steps.checks.kernel_event_rule import BOOT_SPAN

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
MSGINFO = "dmesg-no-stamps__hpsa-bnx2-lines__one-stamped-line__insights-core.txt"
BANNER = "Linux version 2.6.32-431.el6.x86_64 (mockbuild@x86-023.build.eng.bos.redhat.com) (gcc 4.4.7)\n"
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"


def test_a_log_without_stamps_is_read_as_a_kernel_log(tmp_path: Path) -> None:
    """MSGINFO, verbatim (16 lines without a stamp, one with): it was "not a recognised command
    output" (exit 2, and with it a whole folder); it is a kernel log, gpu_xid judged. With its one
    stamped line removed (all of it as `dmesg -t` prints) it is read too."""
    text = (REAL / MSGINFO).read_text()
    unstamped = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("["))
    for name, saved in (("as-saved", text), ("dmesg-t", unstamped)):
        assert detect_kind(saved) == "kernel_log", name
        _, checks = judged_box(tmp_path / name, {"dmesg.txt": saved}, "gpu_model: A100\n")
        assert checks["gpu_xid"].verdict == "pass", checks["gpu_xid"].actual
        assert checks["gpu_xid"].actual.endswith(BOOT_SPAN)


def test_an_unstamped_xid_and_banner_are_judged(tmp_path: Path) -> None:
    """MSGINFO with the boot banner put above it and an NVRM Xid line (as the driver prints it,
    unstamped) put at its end: the log covers the boot, and the Xid 79 fails gpu_xid."""
    text = BANNER + (REAL / MSGINFO).read_text()
    _, checks = judged_box(tmp_path / "banner", {"dmesg.txt": text}, "gpu_model: A100\n")
    assert checks["gpu_xid"].verdict == "pass", checks["gpu_xid"].actual
    assert "starts after boot" not in checks["gpu_xid"].actual
    _, checks = judged_box(tmp_path / "xid", {"dmesg.txt": text + XID}, "gpu_model: A100\n")
    assert checks["gpu_xid"].verdict == "fail", checks["gpu_xid"].actual
    assert "79" in checks["gpu_xid"].actual


def test_a_text_of_a_few_kernel_words_is_no_log() -> None:
    """Prose naming the kernel's words (`ACPI: ` once, an `nvidia: ` aside) among other lines is
    no kernel log: still refused."""
    text = "ACPI: tables look fine\nthe box was rebooted\nnvidia: driver loaded, we think\nok then\nbye\n"
    assert detect_kind(text) is None


def test_a_grep_of_one_kind_of_kernel_line_without_stamps_is_no_log() -> None:
    """Review BBB: `dmesg -t | grep -i edac` (the real osm-operations#300 kern.log's EDAC lines
    with their syslog heads and stamps taken off, the edit) or three `ACPI:` lines of MSGINFO's
    kind hold one kind of kernel line: a grep that cannot show an Xid, which passed "no Xid in
    the kernel log"; it is no whole log (refused as before), while MSGINFO's several kinds are."""
    text = (REAL / "kern-log__edac-ce-repeated-one-dimm__osm-operations-300.txt").read_text()
    edac = "".join(line[line.index("EDAC") :] + "\n" for line in text.splitlines() if "EDAC" in line)
    assert edac.count("\n") >= 3
    assert detect_kind(edac) != "kernel_log"
    acpi = (
        "ACPI: RSDP 00000000000f0490 00024 (v02 HP)\n"
        "ACPI: XSDT 00000000bddaed00 000D4 (v01 HP ProLiant)\n"
        "ACPI: FACP 00000000bddaee40 000F4 (v03 HP ProLiant)\n"
    )
    assert detect_kind(acpi) != "kernel_log"
    assert detect_kind((REAL / MSGINFO).read_text()) == "kernel_log"


POP_751 = "unstamped-kernel-lines__aer-corrected-rxerr-root-port-and-nvme__gtx1060-laptop__pop-os-751.txt"


def test_unstamped_lines_of_two_kinds_are_refused_with_the_documented_sentence(tmp_path: Path) -> None:
    """pop-os#751's lines as stored (corrected AER RxErr of a root port and an NVMe, no stamps,
    `pcieport` and `nvme` lines only) and the osm-operations#300 EDAC grep of the test above: no
    log, refused with the offline guide's sentence, "save `dmesg` with its stamps", naming the
    kinds. (Before: the generic "not a recognised command output (expected ...)".)"""
    import pytest

    from gpuonboard.api import offline
    from gpuonboard.errors import UsageError

    kern = (REAL / "kern-log__edac-ce-repeated-one-dimm__osm-operations-300.txt").read_text()
    edac = "".join(line[line.index("EDAC") :] + "\n" for line in kern.splitlines() if "EDAC" in line)
    for name, text, kinds in (
        ("pop.txt", (REAL / POP_751).read_text(), "2 kinds only (`pcieport`, `nvme`)"),
        ("edac.txt", edac, "1 kind only (`EDAC`)"),
    ):
        (tmp_path / name).write_text(text)
        with pytest.raises(UsageError) as err:
            offline.load_outputs([str(tmp_path / name)])
        said = str(err.value)
        assert f"kernel lines without their time stamps, of {kinds}" in said, said
        assert said.endswith("save `dmesg` with its stamps (`sudo dmesg -T`).")
