"""Two commands and their outputs on one line with no prompt between them (a page that lost its
line ends: `free total ... Swap: ... free -h total ...`, cnblogs 18513280): refused as "2 free
outputs (one pasted twice, or two boxes' in one file)", untrue of one box's `free` and `free -h`;
it is refused as several commands' outputs sharing one line (measure31b 36)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import glued
from gpuonboard.api.offline import load_outputs
from gpuonboard.errors import UsageError

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
LINE = "transcript__free+free-h-GLUED-on-one-line-no-prompt__809mib-vm__cnblogs-18513280.txt"


def test_two_commands_on_one_line_are_said_to_share_it() -> None:
    with pytest.raises(UsageError) as err:
        load_outputs([str(SESSIONS / LINE)])
    assert "several commands' outputs share one line (a page that lost its line ends)" in str(err.value)
    assert "one pasted twice" not in str(err.value)


def test_one_command_glued_onto_its_line_is_still_split() -> None:
    """The first command and its output alone (cut in the test before `free -h`): read."""
    line = (SESSIONS / LINE).read_text().split(" free -h ")[0]
    found = glued.split(line, "free")
    assert isinstance(found, tuple) and found[0] == "free" and found[1].startswith("total used")
