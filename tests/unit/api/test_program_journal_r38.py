"""Syslog and journal lines of programs other than the kernel (measure38c 13, 19):

- a syslog of one program's own lines (`Mar 15 20:43:23 host nvidia-persistenced: Started (721)`,
  rsyslog's tag without a `[pid]`, or the journal's with one) is said as the journal of another
  program that it is, quoting the GPU stack's failure it shows, as a journal of several programs'
  lines is; it was refused as "not a recognised command output" (its line heads were dropped as
  a unit's output's, and what was left is no output);
- a log whose one kernel line is upstart's `init: nvidia-persistenced main process ...` among
  the daemon's own lines: both kernel rules count its kernel lines only and name the first, and
  neither calls upstart's line or the daemon's "the NVIDIA driver's lines".

Real captures: tests/fixtures/real/SOURCES.md; the edits are in memory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import checks

REAL = Path(__file__).parents[2] / "fixtures" / "real"

T420S = (
    "syslog__nvidia-persistenced-untagged-pid-failed-to-query-devices-only"
    "__thinkpad-t420s__ubuntuforums-2016.txt"
)
UPSTART = "dmesg-syslog__bbcode-color-persistenced-shutdown-then-upstart-kernel-init-line__ubuntuforums.txt"
VBIOS = (
    "dmesg-syslog__vbios-copy-failed-rminitadapter-0x30-minor-number-bearing"
    "__laptop__switch-screen-readme.txt"
)
ROCKY = "journalctl-u-nvidia-persistenced__failed-to-query-devices-first-char-cut__rocky-615-hami-notes.txt"

JOURNAL = "a journal of other programs' lines only"
QUERY = "it shows `Failed to query NVIDIA devices."


def _refusal(tmp_path: Path, text: str, name: str = "syslog.txt") -> str:
    with pytest.raises(UsageError) as refused:
        checks(tmp_path, name, text)
    return str(refused.value)


def test_a_syslog_of_the_persistence_daemon_without_pids_is_said_as_its_journal(tmp_path: Path) -> None:
    """measure38c 13: four `nvidia-persistenced:` lines of a 2016 Ubuntu syslog, no `[pid]`."""
    said = _refusal(tmp_path, (REAL / T420S).read_text())
    assert f"{JOURNAL} (4 lines of nvidia-persistenced)" in said, said
    assert QUERY in said and "save the kernel log" in said
    assert "not a recognised command output" not in said


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace("nvidia-persistenced:", "nvidia-persistenced[721]:"),  # (journald's tag)
        lambda t: t.strip("\n") + "\n",  # (without the block's blank lines)
        lambda t: re.sub(r"(?m)^(\w{3} \d\d [\d:]{8}) ", r"\1.123456 ", t),  # (short-precise times)
    ],
    ids=["pid", "no-blank-lines", "precise"],
)
def test_the_family_of_one_programs_syslog_is_said_alike(tmp_path: Path, edit: object) -> None:
    """The same lines in the journal's form (`nvidia-persistenced[721]:`), without the code
    block's blank lines, or with a journal's fractions of a second: the same sentence."""
    assert callable(edit)
    said = _refusal(tmp_path, edit((REAL / T420S).read_text()))
    assert f"{JOURNAL} (4 lines of nvidia-persistenced)" in said and QUERY in said, said


def test_the_rocky_journal_of_the_daemon_alone_is_said_alike(tmp_path: Path) -> None:
    """The Rocky 9 `journalctl -u nvidia-persistenced` capture's daemon lines alone (its systemd
    lines and its cut first line left out): one program's journal, said as before with them."""
    lines = (REAL / ROCKY).read_text().splitlines()
    own = [line for line in lines if line.startswith("Sep ") and "nvidia-persistenced[" in line]
    said = _refusal(tmp_path, "\n".join(own) + "\n")
    assert f"{JOURNAL} ({len(own)} lines of nvidia-persistenced)" in said and QUERY in said, said


def test_upstarts_kernel_line_among_the_daemons_is_counted_alone_by_both_rules(tmp_path: Path) -> None:
    """measure38c 19: gpu_xid said "1 line", nvswitch_sxid "the NVIDIA driver's lines (4 lines,
    first `...init: ...`)" of the same log."""
    rows = {c.name: c for c in checks(tmp_path, "syslog.txt", (REAL / UPSTART).read_text())}
    first = "`Jul 30 09:26:16 i kernel: [ 1851.487956] init: nvidia-persistenced"
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert rows[rule].verdict == "unverified"
        assert f"(1 line, first {first}" in rows[rule].actual, rows[rule].actual
        assert "NVIDIA driver's lines" not in rows[rule].actual
        assert "4 lines" not in rows[rule].actual


def test_an_nvrm_excerpt_in_a_syslog_beside_the_daemons_lines_counts_its_kernel_lines(tmp_path: Path) -> None:
    """The family: a driver excerpt without its banner (the 3xx VBIOS failure, three kernel
    lines) with the daemon's syslog lines around it: 3 lines, the first the kernel's."""
    driver = (REAL / VBIOS).read_text()
    daemon = (REAL / T420S).read_text().strip("\n")
    text = daemon.replace("Mar 15 20:43:23 laurie-ThinkPad-T420s", "Nov 24 22:40:32 hostname") + "\n" + driver
    text = text.replace("NVRM: rm_init_adapter", "nvidia: rm_init_adapter")  # (not NVRM lines only)
    sxid = next(c for c in checks(tmp_path, "syslog.txt", text) if c.name == "nvswitch_sxid")
    assert sxid.verdict == "unverified"
    first = "`Nov 24 22:40:32 hostname kernel: [351621.701163] NVRM: failed"
    assert f"(3 lines, first {first}" in sxid.actual, sxid.actual
