"""A saved file holding a kernel log's lines and another output with no prompt between them
(`dmesg | tail` then `nvidia-smi`, one paste): each is read as an output of its own, the Xid
judged. Before, only the table was read and the Xid 79 dropped without a word (measure32c 31).

Real capture: tests/fixtures/sessions/SOURCES.md (pastebin jJdbRLSr); the syslog's lines are
pop-os/pop#3363's (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline

from ..offline_judge import verdicts

FIXTURES = Path(__file__).parents[2] / "fixtures"
PASTE = (
    FIXTURES
    / "sessions"
    / (
        "page__dmesg-xid79+nvidia-smi-375-table-NO-PROMPT-BETWEEN-spaces-collapsed__gt840m-pastebin-jJdbRLSr.txt"
    )
)
POP = (
    FIXTURES
    / "real"
    / (
        "dmesg-syslog__xid-79-fallen-off-bus__gdm-x-session-lines-outnumber-kernel__last-line-cut__pop-os-3363.txt"
    )
)
ORDER = "gpu_model: GeForce 840M\ngpu_count: 1\n"
LINES = PASTE.read_text().split("\n")
DMESG, TABLE = LINES[:3], LINES[3:]


def test_the_dmesg_lines_above_the_table_are_judged(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "paste.txt", PASTE.read_text(), ORDER)
    verdict, actual = got["gpu_xid"]
    assert verdict == "fail" and "Xid 79" in actual, actual
    assert got["gpu_count"][0] == "pass", got


def test_the_file_is_said_to_hold_two_outputs() -> None:
    notes: list[str] = []
    found = offline._saved_outputs(PASTE, PASTE.read_bytes(), notes)
    assert [kind for kind, *_ in found] == ["kernel_log", "nvidia_smi_table"], found
    assert any("a kernel log's lines (lines 1-3) and another output (lines 4-21)" in n for n in notes), notes


def test_dmesg_lines_below_the_table_are_judged(tmp_path: Path) -> None:
    """Edit: the table first (its trailing prompt left out), then the dmesg lines."""
    text = "\n".join([*TABLE[:-2], *DMESG]) + "\n"
    verdict, actual = verdicts(tmp_path, "paste.txt", text, ORDER)["gpu_xid"]
    assert verdict == "fail" and "Xid 79" in actual, actual


def test_a_syslog_with_other_programs_lines_above_the_table_is_judged(tmp_path: Path) -> None:
    """Edit: pop-os#3363's syslog (kernel lines among gdm-x-session's, its cut last line left
    out) above the paste's table: the other programs' lines are the log's, taken with it."""
    log = POP.read_text().splitlines()[:-1]
    text = "\n".join([*log, *TABLE]) + "\n"
    verdict, actual = verdicts(tmp_path, "paste.txt", text, ORDER)["gpu_xid"]
    assert verdict == "fail" and "Xid 79" in actual, actual


def test_a_table_alone_is_still_one_output() -> None:
    notes: list[str] = []
    found = offline._saved_outputs(PASTE, "\n".join(TABLE).encode(), notes)
    assert [kind for kind, *_ in found] == ["nvidia_smi_table"] and not notes, (found, notes)


def test_dmesg_lines_on_both_sides_of_the_table_are_one_log_with_a_gap(tmp_path: Path) -> None:
    """Edit (review revH): one dmesg line, the table, then the dmesg lines with the Xid 79
    (`dmesg | tail; nvidia-smi; dmesg | tail` pasted as one block). The tail's Xid was read as
    the table's and dropped, and the head's one line passed gpu_xid; now both runs are the log,
    the lines between them said left out."""
    text = "\n".join([DMESG[0], *TABLE[:-2], *DMESG[1:]]) + "\n"
    got = verdicts(tmp_path, "paste.txt", text, ORDER)
    verdict, actual = got["gpu_xid"]
    assert verdict == "fail" and "Xid 79" in actual, actual
    assert got["gpu_count"][0] == "pass", got
    notes: list[str] = []
    path = tmp_path / "both.txt"
    path.write_text(text)
    offline._saved_outputs(path, path.read_bytes(), notes)
    assert any("its two runs left out" in n for n in notes), notes


def test_a_log_in_two_runs_without_an_xid_proves_nothing(tmp_path: Path) -> None:
    """The same, the Xid line taken out: the lines between the two runs are not shown, so no
    Xid seen is no pass."""
    tail = [line for line in DMESG[1:] if "Xid" not in line]
    text = "\n".join([DMESG[0], *TABLE[:-2], *tail]) + "\n"
    verdict, actual = verdicts(tmp_path, "paste.txt", text, ORDER)["gpu_xid"]
    assert verdict != "pass", actual
