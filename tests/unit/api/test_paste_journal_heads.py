"""A journal's or a syslog's line heads in a saved output (api/paste.py _unstamped, _journal_iso)
and a `set -x` trace's pipeline above one (api/offline.py _traced_command): a program's lines
that quote the kernel's are never read as the kernel log, a journal's own ISO times are never
taken for a collector's stamps, and a traced pipeline's filter narrows what the log shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
ORDER = "gpu_count: 1\ncpu_cores: 8\nram: 64GB\nmin_driver: '470.57'\ninterconnect: nvlink\n"
BUMBLEBEE = (
    "journalctl-b__bumblebeed-line-quoting-xorg-error-behind-dmesg-stamp"
    "__no-kernel-line-refused__bumblebee-550.txt"
)
POP_OS_SYSLOG = (
    "dmesg-syslog__xid-79-fallen-off-bus__gdm-x-session-lines-outnumber-kernel"
    "__last-line-cut__pop-os-3363.txt"
)
XID_79 = "[9.1] NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
SUDO_GREP = (
    "   admin : TTY=pts/0 ; PWD=/home/admin ; USER=root ; COMMAND=/usr/bin/grep NVRM: /var/log/kern.log"
)
GREP_NVRM = "dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt"


def _verdicts(tmp_path: Path, text: str, name: str = "saved.txt") -> dict[str, tuple[str, str]]:
    (tmp_path / "order.yml").write_text(ORDER)
    order = offline.load_order(str(tmp_path / "order.yml"))
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    facts = offline.parse_facts(offline.load_outputs([str(path)]))
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, order)}


def _bumblebee(message: str, program: str = "bumblebeed[1734]") -> str:
    """The real Bumblebee journal line with its program and message replaced."""
    text = (REAL / BUMBLEBEE).read_text(encoding="utf-8")
    edited = re.sub(
        r"^(\w{3} \d\d \d\d:\d\d:\d\d \S+) bumblebeed\[1734\]: .*$", rf"\1 {program}: {message}", text
    )
    assert edited != text or program == "bumblebeed[1734]"
    return edited


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("bumblebeed[1734]", None),  # (the capture as it is: a dmesg-like stamp in bumblebeed's message)
        (
            "optirun[1734]",
            XID_79,
        ),
        (
            "sudo",
            SUDO_GREP,
        ),
        (
            "sudo[2211]",
            SUDO_GREP,
        ),
    ],
)
def test_a_program_s_journal_lines_quoting_the_kernel_s_are_no_kernel_log(
    tmp_path: Path, program: str, message: str | None
) -> None:
    """The real `journalctl -b` excerpt of Bumblebee-Project/Bumblebee#550 (one line of the
    program bumblebeed, its message starting with a dmesg-like `[91063.874832]`), as it is, and
    with that line's program and message replaced (in this test) by a program forwarding the
    kernel's Xid 79 line, or by sudo's line of a `grep NVRM: /var/log/kern.log` (pid-less as
    syslog writes it, with a pid as the journal does): a program's lines are that program's, never
    the kernel log, so the file is refused as no output read here. Before, the program's head
    was dropped as a unit's and the rest read as a kernel log: gpu_xid passed "no Xid in the
    kernel log" (nvswitch_sxid too), or failed the box on another program's Xid line."""
    text = (REAL / BUMBLEBEE).read_text(encoding="utf-8") if message is None else _bumblebee(message, program)
    with pytest.raises(UsageError):
        _verdicts(tmp_path, text)


@pytest.mark.parametrize("form", ["no-hostname", "pid-less"])
def test_a_journal_s_iso_times_beside_its_kernel_lines_are_its_own(tmp_path: Path, form: str) -> None:
    """The real Pop!_OS syslog (Xid 79, gdm-x-session's lines outnumber the kernel's, its last
    line cut), rewritten in this test with ISO times (`2025-01-02T18:37:03.123456+00:00`) as
    `journalctl -o short-iso-precise --no-hostname` writes them (no host) or as rsyslog's RFC 3339
    lines do with gdm-x-session's pid dropped (a pid-less program, as sudo's and audit's lines
    are): the times are the log's own, kept, and the Xid 79 fails gpu_xid as in the capture.
    Before, most lines did not read `host kernel:` or `host prog[pid]:`, the times were dropped as
    a collector's stamps and the file was refused."""
    text = (REAL / POP_OS_SYSLOG).read_text(encoding="utf-8")
    iso = re.sub(r"^\w{3} [ \d]\d (\d\d:\d\d:\d\d) ", r"2025-01-02T\1.123456+00:00 ", text, flags=re.M)
    if form == "no-hostname":
        iso = re.sub(r"^(\S+) xxx ", r"\1 ", iso, flags=re.M)
    else:
        iso = iso.replace("gdm-x-session[3434]:", "gdm-x-session:")
    assert iso != text
    whole = _verdicts(tmp_path, text, "whole.txt")
    got = _verdicts(tmp_path, iso)
    assert whole["gpu_xid"][0] == got["gpu_xid"][0] == "fail"
    assert got["gpu_xid"][1].startswith("GPU at PCI 0000:01:00: Xid 79 GPU has fallen off the bus")


@pytest.mark.parametrize(
    "trace",
    ["+ dmesg -T\n+ grep NVRM\n", "+ grep NVRM\n+ dmesg -T\n", "+ dmesg -T\n+ grep NVRM\n+ tee out.txt\n"],
)
def test_a_traced_pipeline_s_grep_narrows_the_log(tmp_path: Path, trace: str) -> None:
    """The real `dmesg -T | grep NVRM` (Xid 43, 31, 94) below its `set -x` trace, each command of
    the pipeline on a line of its own (in either order, a `tee` beside them; the trace added in
    this test): judged as below `$ dmesg -T | grep NVRM`, SXid lines cannot get through the
    grep, so nvswitch_sxid is unverified naming the pipeline. Before, only the traced `dmesg -T`
    was read: the log was taken whole and nvswitch_sxid passed."""
    text = (REAL / GREP_NVRM).read_text(encoding="utf-8")
    prompted = _verdicts(tmp_path, "$ dmesg -T | grep NVRM\n" + text, "prompted.txt")
    got = _verdicts(tmp_path, trace + text)
    assert got["nvswitch_sxid"][0] == prompted["nvswitch_sxid"][0] == "unverified"
    assert "`dmesg -T | grep NVRM`" in got["nvswitch_sxid"][1]
    assert {rule: row[0] for rule, row in got.items()} == {rule: row[0] for rule, row in prompted.items()}


def test_a_trace_of_the_driver_s_loading_line_alone_is_a_grep_s(tmp_path: Path) -> None:
    """The real grep's first line (the driver's loading line) alone below `+ dmesg -T` and
    `+ grep -i nvrm` (cut and traced in this test): the grep let only NVRM lines through, so
    neither rule passes on "no Xid"."""
    first = (REAL / GREP_NVRM).read_text(encoding="utf-8").splitlines()[0]
    got = _verdicts(tmp_path, f"+ dmesg -T\n+ grep -i nvrm\n{first}\n")
    assert got["gpu_xid"][0] == got["nvswitch_sxid"][0] == "unverified"
