"""A saved kernel log's copied command is read by each tool's own option grammar (its getopt
string and long options, api/kernel_command.py), not by special cases: journalctl's `--boot -1`
is `-b -1` (it takes the next word as its boot where it parses), `-r` prints the newest line first,
a `|` inside quotes is no pipe, `-D` / `--file` / `-M` read another journal, a cursor or a match
keeps part of the lines, `-n all` keeps them all; dmesg's `--level` naming every level keeps all;
`cat /var/log/dmesg` is a snapshot written at boot; `ssh head dmesg` runs dmesg on `head`. Each
case below was misread before (the verdict tests fail on the code before; derived fixtures from
real captures: tests/fixtures/derived/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.command_line import pipeline
from gpuonboard.api.kernel_command import earlier_boot
from gpuonboard.api.narrowed import narrowed

from ..offline_judge import checks

DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("journalctl-k-boot-1__h100-hgx__fallen-off-bus__derived.txt", "journalctl -k --boot -1 --no-pager"),
        (
            "journalctl-k-g-quoted-pipe-b-1__h100-hgx__fallen-off-bus__derived.txt",
            "journalctl -k -g 'NVRM|nvidia' -b -1",
        ),
    ],
)
def test_an_earlier_boots_fault_read_by_the_grammar_is_history(
    tmp_path: Path, name: str, command: str
) -> None:
    """`--boot -1` was read as this boot (`--boot` had no lookahead), and `-g 'NVRM|nvidia' -b -1`
    was cut at the quoted `|` (`-b -1` lost): the fault was judged as this boot's."""
    xid = {c.name: c for c in checks(tmp_path, "kern.txt", (DERIVED / name).read_text())}["gpu_xid"]
    assert xid.verdict == "unverified", xid
    assert "(logged before the log's last reboot)" in xid.actual
    assert f"`{command}` is the log of an earlier boot" in xid.detail


def test_a_journal_printed_newest_first_is_read_in_the_journals_order(tmp_path: Path) -> None:
    """`journalctl -k -b -r`: one boot, its `Linux version` banner the last line. Read top down,
    the fault was before the banner (an earlier boot's: unverified, rebooted_since); it is this
    boot's: a failure."""
    name = "journalctl-k-b-r__ubuntu-20.04-forum__then-h100-fallen-off-bus__newest-first__derived.txt"
    xid = {c.name: c for c in checks(tmp_path, "kern.txt", (DERIVED / name).read_text())}["gpu_xid"]
    assert xid.verdict == "fail", xid
    assert "logged before the log's last reboot" not in xid.actual


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("journalctl -k --boot -1", "earlier boot"),
        ("journalctl --boot -2 --dmesg", "earlier boot"),
        ("journalctl -k -g 'Xid|NVRM' -b -1", "earlier boot"),
        ("journalctl -k -b 7f0bd8b6-fa1f-4e2f-91d3-e5d29a4c1c5b", "the boot it names"),
        ("journalctl -k -D /mnt/old/var/log/journal", "reads another journal"),
        ("journalctl -k --directory=/mnt/old/var/log/journal", "reads another journal"),
        ("journalctl -k --file /var/log/journal/x/system@abc.journal", "reads another journal"),
        ("journalctl -k -M container1", "reads another journal"),
        ("journalctl -k --root=/mnt", "reads another journal"),
        ("journalctl -k --after-cursor=s=abc", "only some of the boot's lines"),
        ("journalctl -k --cursor-file=/tmp/c", "only some of the boot's lines"),
        ("journalctl -k -c s=abc", "only some of the boot's lines"),
        ("journalctl -k _PID=1", "only some of the boot's lines"),
        ("journalctl -kf", "only some of the boot's lines"),  # (`-f`: the last 10 lines)
        ("journalctl -k -n", "only some of the boot's lines"),
        ("journalctl -k -n all", ""),
        ("journalctl -k --lines=all", ""),
        ("journalctl -k -b all", ""),  # (every boot: told apart by the log's lines)
        ("journalctl -k -o cat -b 0", ""),
        ("journalctl _TRANSPORT=kernel", ""),  # (what `-k` matches, every boot)
        ("dmesg -u", "only some of the log's lines"),  # (userspace's lines only)
        ("dmesg -Tl err", "only some of the log's lines"),
        ("dmesg --level=emerg,alert,crit,err,warn,notice,info,debug", ""),
        ("dmesg -l debug+", ""),
        ("dmesg -l err+", "only some of the log's lines"),
        ("dmesg -f kern", ""),
        ("dmesg -r", ""),  # (`--raw`, not reverse)
        ("dmesg -K /tmp/kmsg.bin", "reads a saved file"),
        ("cat /var/log/dmesg", "a snapshot saved at boot"),
        ("sudo cat /var/log/boot.log", "a snapshot saved at boot"),
        ("cat /var/log/kern.log.1 /var/log/kern.log", ""),  # (the current file too)
        ("ssh head dmesg", ""),  # (a host named head: dmesg is the command)
        ("ssh -p 2222 head 'dmesg -l err'", "only some of the log's lines"),
        ("ssh -t gpu1 sudo journalctl -k -b -1", "earlier boot"),
    ],
)
def test_the_tools_own_grammar(command: str, why: str) -> None:
    said = narrowed("kernel_log", command)
    assert (why in said and said.startswith(f"`{command}`")) if why else said == "", said


@pytest.mark.parametrize(
    ("command", "earlier"),
    [
        ("journalctl -k --boot -1", True),
        ("journalctl -kb -1 -g 'Xid|NVRM' | less", True),
        ("journalctl -k -g 'Xid|NVRM' -b -1", True),
        ("journalctl -k --boot -k", False),  # (`-k` is no boot: `--boot` is this one)
        ("journalctl -k -b 7f0bd8b6-fa1f-4e2f-91d3-e5d29a4c1c5b-1", False),  # (named: maybe not)
    ],
)
def test_earlier_boot_by_the_grammar(command: str, earlier: bool) -> None:
    assert earlier_boot(command) is earlier


def test_a_pipeline_splits_at_unquoted_bars_only() -> None:
    assert pipeline("journalctl -k -g 'Xid|NVRM' -b -1 | grep -v x") == [
        "journalctl -k -g 'Xid|NVRM' -b -1 ",
        " grep -v x",
    ]
    assert pipeline('dmesg | grep -E "Xid|NVRM" |& tee k') == ["dmesg ", ' grep -E "Xid|NVRM" ', " tee k"]
