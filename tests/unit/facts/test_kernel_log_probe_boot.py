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
