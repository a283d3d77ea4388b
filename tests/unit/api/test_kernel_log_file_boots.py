"""A copied line that reads an earlier boot's journal and a log file: the current log file
(`kern.log`, `syslog`, `messages`) is this boot's, so its faults are judged, never history
(they were "logged before the log's last reboot" -> unverified); any other file's boot is not
known. A log filtered by grep's compressed kin (`zgrep`) or by any pipeline stage not known to
pass every line (perl, python, ack) is a filtered log, never "no Xid" (it passed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.kernel_command import earlier_boot, kernel_log_mixed
from gpuonboard.api.narrowed import narrowed

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# a real H100 HGX syslog: a GPU fell off the bus (no Xid)
FALLEN = REAL / "dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt"


@pytest.mark.parametrize(
    "command",
    [
        "journalctl -k -b -1; cat /var/log/kern.log",
        "journalctl -k -b -1; grep -i -e nvrm -e xid /var/log/kern.log",
        "journalctl -k -b -1; sudo cat /var/log/messages",
    ],
)
def test_this_boots_log_file_beside_an_earlier_boots_journal_fails_on_its_fault(
    tmp_path: Path, command: str
) -> None:
    assert not earlier_boot(command)
    got = verdicts(tmp_path, "k.txt", f"root@gpu01:~# {command}\n" + FALLEN.read_text())
    verdict, actual = got["gpu_xid"]
    assert verdict == "fail", actual
    assert "GPU has fallen off the bus -> reboot" in actual, actual


def test_an_earlier_boots_journal_written_to_a_file_then_grepped_is_still_that_boots() -> None:
    assert earlier_boot("journalctl -k -b -1 > k.txt; grep -i nvrm k.txt")
    assert "a log file's" in kernel_log_mixed("journalctl -k -b -1; grep NVRM /var/log/kern.log.1")


@pytest.mark.parametrize(
    ("command", "by"),
    [
        ("zgrep -h NVRM /var/log/kern.log.2.gz", "zgrep"),
        ("xzgrep NVRM /var/log/kern.log.1.xz", "xzgrep"),
        ("dmesg | perl -ne 'print if /NVRM/'", "perl"),
        ("dmesg -T | python3 -c 'import sys'", "python3"),
        ("dmesg | ack NVRM", "ack"),
    ],
)
def test_any_stage_not_known_to_pass_every_line_filters_the_log(
    tmp_path: Path, command: str, by: str
) -> None:
    assert f"keeps only the lines {by} let through" in narrowed("kernel_log", command)
    text = f"root@gpu01:~# {command}\n" + FALLEN.read_text().splitlines()[0] + "\n"
    assert verdicts(tmp_path, "k.txt", text)["gpu_xid"][0] != "pass"


@pytest.mark.parametrize("command", ["dmesg -T | less", "dmesg | tee d.txt", "dmesg | sort", "dmesg | ts"])
def test_a_stage_that_passes_every_line_keeps_the_log_whole(command: str) -> None:
    assert narrowed("kernel_log", command) == ""


def test_a_tool_name_inside_an_xml_tag_is_no_command() -> None:
    """`<free>19948 MiB</free>` (a line of `nvidia-smi -q -x`) matched the prompt pattern (the
    tool's name `free` followed by `>`)."""
    from gpuonboard.api.saved_text import _COMMAND_LINE, _PROMPT_LINE

    for line in ("<free>19948 MiB</free>", "\t\t\t<free>0 MiB</free>"):
        assert _PROMPT_LINE.fullmatch(line) is None and _COMMAND_LINE.fullmatch(line.strip()) is None
    assert _PROMPT_LINE.fullmatch("root@gpu01:~# free -m") is not None
