"""Review revT F4 (round 37): journalctl's own `-- ... --` lines (`-- Logs begin at ... --`,
`-- Journal begins at ... --`, `-- No entries --`, `-- Boot <id> --`, `-- Reboot --`) are no
comment marks of another language (`--`, api/saved_text._uncommented): kept, so that journalctl's
"no entries" is still read as such. Before, each lost its leading `--` and the file was "no
output this tool reads"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import checks

_BEGIN = "-- Logs begin at Mon 2024-06-03 09:12:01 UTC, end at Tue 2024-06-04 10:00:00 UTC. --"
_JOURNAL = "-- Journal begins at Mon 2024-06-03 09:12:01 UTC, ends at Tue 2024-06-04 10:00:00 UTC. --"


@pytest.mark.parametrize(
    "lines",
    [
        (_BEGIN, "-- No entries --"),
        (_JOURNAL, "-- No entries --"),
    ],
)
def test_journalctls_own_lines_are_no_comment_marks(tmp_path: Path, lines: tuple[str, ...]) -> None:
    text = "$ journalctl -k -b --grep=Xid\n" + "\n".join(lines) + "\n"
    got = {c.name: c for c in checks(tmp_path, "journal-xid.txt", text)}
    assert got["gpu_xid"].verdict == "unverified", got["gpu_xid"]
    assert "journalctl printed only `-- No entries --`" in got["gpu_xid"].actual, got["gpu_xid"].actual


@pytest.mark.parametrize(
    "lines",
    [
        ["-- Boot 0b5a2f0c4e6d4f1b8a9c3d2e1f0a9b8c --", "-- No entries --"],
        ["-- Reboot --", "-- No entries --"],
        [_BEGIN, "-- No entries --"],
    ],
)
def test_journalctls_lines_keep_their_dashes(lines: list[str]) -> None:
    from gpuonboard.api.saved_text import _uncommented

    assert _uncommented(lines) == lines


def test_lines_commented_with_two_dashes_still_lose_their_mark() -> None:
    """The counterpart: a block commented out with `-- ` (SQL, Lua, Haskell) whose lines are no
    journalctl mark (none ends in ` --`) is still read without its mark."""
    from gpuonboard.api.saved_text import _uncommented

    lines = [
        "-- Filesystem      Size  Used Avail Use% Mounted on",
        "-- /dev/sda1       100G   10G   90G  10% /",
    ]
    assert _uncommented(lines) == [line[3:] for line in lines]
