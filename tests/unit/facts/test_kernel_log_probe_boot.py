"""The live kernel-log probe reads `journalctl -k -b` where dmesg's log no longer reaches back to
boot (its ring buffer wrapped on a long-running box) while the journal's does: an Xid logged
early in the boot, gone from dmesg, is judged. A journal whose first line is not the boot either
(its oldest entries dropped) no longer counts as reaching back to boot: covers_boot reads the
first line of either source."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from gpuonboard.facts.kernel_log import parse_kernel_log

from .test_kernel_log_probe_filter import probe_on

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# a real dmesg that no longer reaches back to boot (its first line at 6781741 s: an NVSwitch box)
WRAPPED = REAL / "dmesg__xid-79-sxid-20034__nvswitch.txt"
# a real `journalctl -k` of two boots: the current boot's part starts with the kernel's banner
TWO_BOOTS = REAL / "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt"
REFUSED = REAL / "journalctl__refused-not-in-adm-group__hint-no-entries__systemd-250.txt"


def _this_boot() -> str:
    """What `journalctl -k -b` prints on the two-boot box: its part after the reboot separator."""
    return TWO_BOOTS.read_text().split("-- Reboot --\n", 1)[1]


def _probe(tmp_path: Path, journal: str | None) -> str:
    """The probe's output on a host whose `dmesg` prints WRAPPED and whose `journalctl` prints
    `journal` (None: no journalctl installed)."""
    tools = {"dmesg": f"exec cat {shlex.quote(str(WRAPPED))}"}
    if journal is not None:
        (tmp_path / "journal.txt").write_text(journal)
        tools["journalctl"] = f"exec cat {shlex.quote(str(tmp_path / 'journal.txt'))}"
    return probe_on(tmp_path, tools)


def test_a_wrapped_dmesg_gives_way_to_the_journal_of_this_boot(tmp_path: Path) -> None:
    log = parse_kernel_log(_probe(tmp_path, _this_boot()))
    assert log.source == "journalctl -k -b" and log.covers_boot is True


def test_a_wrapped_dmesg_is_kept_where_the_journal_does_not_reach_boot_either(tmp_path: Path) -> None:
    for journal in (REFUSED.read_text(), "".join(_this_boot().splitlines(True)[1:]), None):
        (tmp_path / "case").mkdir()
        log = parse_kernel_log(_probe(tmp_path / "case", journal))
        assert log.source == "dmesg" and log.covers_boot is False
        assert [e.code for e in log.events if e.kind == "xid"] == [79]  # (the wrapped log still read)
        shutil.rmtree(tmp_path / "case")


def test_a_journal_whose_first_line_is_not_the_boot_does_not_cover_it() -> None:
    whole = parse_kernel_log(f"# source: journalctl -k -b\n# first: {_this_boot().splitlines()[0]}\n")
    later = parse_kernel_log(f"# source: journalctl -k -b\n# first: {_this_boot().splitlines()[1]}\n")
    arm = parse_kernel_log("# source: dmesg\n# first: [    0.000000] Booting Linux on physical CPU 0x0\n")
    assert (whole.covers_boot, later.covers_boot, arm.covers_boot) == (True, False, True)


def test_a_saved_log_is_judged_by_the_first_line_of_its_last_boot(tmp_path: Path) -> None:
    """Offline (no probe header): a `dmesg -T` copied from an H100 box (its first line a Xid's
    months after boot, other devices' lines in it) says the log starts after boot, as the live
    probe's does; a journal of two boots whose last boot starts with the kernel's banner reaches
    back to that boot; a log whose every line is the drivers' (a `dmesg | grep NVRM`, or one
    that only looks like it) says nothing of where its log starts. (Before: None for all.)"""
    later = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"
    assert parse_kernel_log(later.read_text()).covers_boot is False
    assert parse_kernel_log(TWO_BOOTS.read_text()).covers_boot is True
    grep = REAL / "dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt"
    assert parse_kernel_log(grep.read_text()).covers_boot is None
    # (round 38: its first line, NVRM's and the NVSwitch driver's lines only, is 78 days into
    # boot and no module's load: a grep of a whole boot's driver lines starts at the load)
    assert parse_kernel_log(WRAPPED.read_text()).covers_boot is False
    said = details_of(tmp_path, later)
    assert said["gpu_xid"].endswith(
        " (the log read starts after boot, so it does not cover the whole boot)"
    ), said
    assert (
        said["nvswitch_sxid"]
        == "no SXid in the kernel log (the log read starts after boot, so it does not cover the whole boot)"
    ), said


def test_a_log_that_starts_after_boot_passes_saying_it_does_not_cover_the_whole_boot(tmp_path: Path) -> None:
    """The H100 box's `dmesg -T` (its first line a Xid's, months after boot) with its Xid lines
    taken out (edit: every `NVRM` line removed, and the first Xid report's stack dump after it,
    lines 25-37, whose `[nvidia]` frames would start the log inside the driver's report, round 33;
    the other devices' lines kept): no fault in the log read, a pass
    (docs/reference/rules.md `gpu_xid`), whose sentence says plainly that the log does not cover
    the whole boot (before: only "(the log read starts after boot)") and whose advice names what
    is not in it and `journalctl -k -b`."""
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    later = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"
    lines = later.read_text().splitlines(True)
    kept = "".join(line for line in lines[:24] + lines[37:] if "NVRM" not in line)
    # (round 38: what is left is one `clocksource` line, a log of 1 kind, which is picked; the
    # kernel's own lines of other kinds beside it keep the premise, a whole log after boot)
    kept += "[Sun Feb 23 16:24:31 2025] usb 1-1: new high-speed USB device number 3 using xhci_hcd\n"
    kept += "[Sun Feb 23 16:24:32 2025] EXT4-fs (nvme0n1p2): re-mounted. Quota mode: none.\n"
    (tmp_path / later.name).write_text(kept)
    facts = parse_facts(offline.load_outputs([str(tmp_path / later.name)]))
    checks = {c.name: c for c in offline.judge(facts, None)}
    row = checks["gpu_xid"]
    assert (row.verdict, row.actual) == (
        "pass",
        "no Xid in the kernel log (the log read starts after boot, so it does not cover the whole boot)",
    )
    assert "is not in it" in row.detail and "`journalctl -k -b`" in row.detail, row.detail


def details_of(tmp_path: Path, path: Path) -> dict[str, str]:
    """rule -> actual of a saved file judged offline."""
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    (tmp_path / path.name).write_bytes(path.read_bytes())
    facts = parse_facts(offline.load_outputs([str(tmp_path / path.name)]))
    return {c.name: c.actual for c in offline.judge(facts, None)}


def test_a_saved_log_of_the_nvidia_lines_only_says_nothing_of_where_its_log_starts(tmp_path: Path) -> None:
    """A real H100 box's kernel lines, every one the NVIDIA driver's (`nvidia-nvswitch: Probing`,
    `nvidia_uvm: module uses symbols`, `nvidia-modeset: Loading`, `NVRM: ...`), saved without its
    command: what `dmesg | grep -i nvidia` keeps, so not known to be the whole log. It said "(the
    log read starts after boot)" (its `nvidia-modeset` lines are none the probe's grep keeps)."""
    h100 = REAL / "dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt"
    # (round 38, measure38c 16's family: its first line is 17256 s into boot and no module's load,
    # where no grep of a whole boot's driver lines starts: an excerpt around a reload, after boot)
    assert parse_kernel_log(h100.read_text()).covers_boot is False
    said = details_of(tmp_path, h100)
    assert "starts after boot" in said["nvswitch_sxid"], said
