"""A copied command line that is a list (api/command_line.py): every command of it that runs a
kernel log's tool is one the saved log is, or was read from. Before, the first of them was
judged alone: a log saved to a file and then filtered (`dmesg -T > dmesg.txt && cat dmesg.txt |
grep NVRM`) passed as the whole log, `journalctl --list-boots; journalctl -k -b -1` read an
earlier boot's log as this boot's, and `journalctl -k -b -1 ; journalctl -k` made this boot's
fault history. Derived from real captures (tests/fixtures/derived: derive.py); each test fails
on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import command_line
from gpuonboard.api.command_line import run
from gpuonboard.api.kernel_command import earlier_boot, newest_first, printed
from gpuonboard.api.narrowed import narrowed

from ..offline_judge import checks

DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"
_TOOLS = ("journalctl", "dmesg", "cat", "grep")


def _gpu_xid(tmp_path: Path, name: str):  # noqa: ANN202 (an offline_judge check)
    return {c.name: c for c in checks(tmp_path, "kern.txt", (DERIVED / name).read_text())}["gpu_xid"]


@pytest.mark.parametrize(
    ("command", "kept_by"),
    [
        ("dmesg -T > dmesg.txt && cat dmesg.txt | grep NVRM", "cat dmesg.txt | grep NVRM"),
        ("journalctl -k > k.txt; grep -i nvrm k.txt", "grep -i nvrm k.txt"),
        (
            'sudo journalctl -k --no-pager > /tmp/k.log && grep -iE "nvrm|xid" /tmp/k.log',
            'grep -iE "nvrm|xid" /tmp/k.log',
        ),
        ("dmesg > d.txt; cat d.txt | grep -i nvrm", "cat d.txt | grep -i nvrm"),
        ("dmesg >> d.txt; grep -i nvrm d.txt", "grep -i nvrm d.txt"),
        ("dmesg 1> d.txt; grep -i nvrm d.txt", "grep -i nvrm d.txt"),
        ("dmesg &> d.txt; grep -i nvrm d.txt", "grep -i nvrm d.txt"),
        ("ssh box 'dmesg > d.txt; grep -i nvrm d.txt'", "ssh box 'dmesg > d.txt; grep -i nvrm d.txt'"),
        ("dmesg; dmesg | grep -i nvrm", "dmesg | grep -i nvrm"),  # (a filter in any of them)
    ],
)
def test_a_log_saved_to_a_file_then_filtered_is_the_filters(command: str, kept_by: str) -> None:
    assert narrowed("kernel_log", command).startswith(f"`{kept_by}` keeps only the lines")


@pytest.mark.parametrize("command", ["dmesg >&2", "dmesg 1>&2", "dmesg 2> err.txt", "dmesg 2>&1 | tee d.txt"])
def test_output_to_the_terminal_still_is_not_to_a_file(command: str) -> None:
    assert not run(command, _TOOLS).to_file
    assert narrowed("kernel_log", command) == ""


def test_a_log_sent_to_dev_null_is_no_part_of_the_text() -> None:
    assert narrowed("kernel_log", "journalctl -k -b -1 > /dev/null; journalctl -k") == ""
    assert not earlier_boot("journalctl -k -b -1 >/dev/null 2>&1 && journalctl -k")


def test_a_lone_command_saved_to_a_file_is_the_file_given() -> None:
    assert narrowed("kernel_log", "journalctl -k > /tmp/k.txt") == ""
    assert earlier_boot("sudo bash -c 'journalctl -k -b -1 > /tmp/k.txt'")


@pytest.mark.parametrize(
    "command",
    [
        "journalctl --list-boots; journalctl -k -b -1",
        "journalctl --disk-usage && journalctl -k -b -1",
        "journalctl --flush; journalctl --rotate; journalctl -k -b -1",
        "dmesg -C; journalctl -k -b -1",
        "journalctl -k -b -1 > k.txt; grep -i nvrm k.txt",  # (another boot in any of them)
    ],
)
def test_a_command_that_prints_no_log_is_not_the_log(command: str) -> None:
    assert earlier_boot(command)


def test_a_command_that_prints_no_log_alone_is_no_whole_log() -> None:
    assert (
        narrowed("kernel_log", "journalctl --list-boots") == "`journalctl --list-boots` prints no kernel log"
    )


@pytest.mark.parametrize(
    "command",
    [
        "journalctl -k -b -1 ; journalctl -k",
        "journalctl -k -b -1 && journalctl -k",
        "dmesg; journalctl -k -b -1",
    ],
)
def test_an_earlier_boot_and_this_one_are_mixed_not_history(command: str) -> None:
    assert not earlier_boot(command)
    assert "prints the log of an earlier boot and of the boot the box runs now" in narrowed(
        "kernel_log", command
    )


# what journalctl prints where the boot asked for is not kept (systemd's journalctl, v246+ and
# older), and dmesg where it may not read the log (tests/fixtures/real/dmesg__refused-...scylla)
_NO_BOOT = "Data from the specified boot (-1) is not available: No such boot ID in journal\n"
_NO_JOURNAL = "Specifying boot ID or boot offset has no effect, no persistent journal was found.\n"
_REFUSED = "dmesg: read kernel buffer failed: Operation not permitted\n"


@pytest.mark.parametrize(
    ("command", "text", "earlier", "whole"),
    [
        # `a || b`: b runs only where a failed; the text a log prints is a's, whole
        ("sudo journalctl -k -b -1 || sudo journalctl -k", "kernel: NVRM: loading\n", True, False),
        ("journalctl -k -b -1 --no-pager || journalctl -k --no-pager", "kernel: x\n", True, False),
        ("dmesg || journalctl -k -b -1", "[    0.0] Linux version\n", False, True),
        ("journalctl -k -b 0 || journalctl -k -b -1", "kernel: x\n", False, True),
        # a's failure in the text: b printed the log
        ("sudo journalctl -k -b -1 || sudo journalctl -k", _NO_BOOT + "kernel: x\n", False, True),
        ("journalctl -k -b -1 || journalctl -k", _NO_JOURNAL + "kernel: x\n", False, True),
        ("dmesg || journalctl -k -b -1", _REFUSED + "kernel: x\n", True, False),
        (
            "journalctl -k -b -2 || journalctl -k -b -1 || journalctl -k",
            _NO_BOOT * 2 + "kernel: x\n",
            False,
            True,
        ),
    ],
)
def test_of_a_or_b_the_side_that_printed_is_the_log(
    command: str, text: str, earlier: bool, whole: bool
) -> None:
    ran = printed(command, text)
    assert earlier_boot(ran) is earlier, ran
    assert (narrowed("kernel_log", ran) == "") is whole, narrowed("kernel_log", ran)


def test_an_or_list_above_an_earlier_boots_log_is_history_not_a_fault_now(tmp_path: Path) -> None:
    """`sudo journalctl -k -b -1 || sudo journalctl -k` above the H100 fallen off the bus: was
    FAIL (read as two boots' logs, the fault this boot's); the log is -b -1's: history."""
    xid = _gpu_xid(tmp_path, "journalctl-k-b-1-or-k__h100-hgx__fallen-off-bus__derived.txt")
    got = {"gpu_xid": xid}
    assert got["gpu_xid"].verdict == "unverified", got["gpu_xid"]
    assert "(logged before the log's last reboot)" in got["gpu_xid"].actual


def test_newest_first_of_every_log_printed() -> None:
    assert newest_first("journalctl -k -r > k.txt; grep -i nvrm k.txt")
    assert not newest_first("journalctl -k -r; dmesg")


def test_a_shells_list_is_read_whole() -> None:
    assert [r.head[0] for r in command_line.runs("ssh box 'journalctl -k > k; grep x k'", _TOOLS)] == [
        "journalctl",
        "grep",
    ]


@pytest.mark.parametrize("prompt", ["dmesg-to-file-cat-grep", "journalctl-to-file-grep"])
def test_a_filtered_copy_of_a_saved_log_is_no_pass(tmp_path: Path, prompt: str) -> None:
    """Was PASS "no Xid in the kernel log" on the grep's one `NVRM: loading` line."""
    xid = _gpu_xid(tmp_path, f"dmesg-T-grep-NVRM__loading-line-alone__prompt-{prompt}__derived.txt")
    assert xid.verdict == "unverified", xid
    assert "keeps only the lines grep let through" in xid.actual


def test_a_list_of_boots_then_an_earlier_boots_log_is_no_pass(tmp_path: Path) -> None:
    xid = _gpu_xid(tmp_path, "dmesg-T-grep-NVRM__loading-line-alone__prompt-list-boots-then-b-1__derived.txt")
    assert xid.verdict == "unverified", xid
    assert "`journalctl -k -b -1` is the log of an earlier boot" in xid.actual


def test_this_boots_fault_after_an_earlier_boots_log_fails(tmp_path: Path) -> None:
    """`journalctl -k -b -1 ; journalctl -k` above two boots, the H100 fallen off the bus in the
    last: was unverified (every event history), the fail lost."""
    xid = _gpu_xid(tmp_path, "journalctl-k-b-1-then-k__two-boots__then-h100-fallen-off-bus__derived.txt")
    assert xid.verdict == "fail", xid
    assert "fallen off the bus -> reboot" in xid.actual


def test_two_boots_clean_under_a_mixed_list_is_no_pass(tmp_path: Path) -> None:
    xid = _gpu_xid(tmp_path, "journalctl-k-b-1-then-k__ubuntu-20.04-forum__two-boots__derived.txt")
    assert xid.verdict == "unverified", xid
    assert "prints the log of an earlier boot and of the boot the box runs now" in xid.actual
