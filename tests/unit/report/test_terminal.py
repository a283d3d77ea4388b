"""report/terminal.py: the live progress off a terminal."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# run in a fresh interpreter (this one has imported rich long ago), its stdout a pipe: no terminal
PROGRESS_OFF_A_TERMINAL = textwrap.dedent(
    """
    import sys
    from gpuonboard.report import terminal

    p = terminal.Progress(["h1", "h2"])
    with p:
        p.event("h1", "connecting")
        print("before the first host ended, rich imported:", "rich" in sys.modules)
        p.event("h1", "ok")
        p.event("h2", "failed")
    """
)


def test_off_a_terminal_rich_is_imported_when_the_first_host_ends_and_each_end_is_one_line() -> None:
    argv = [sys.executable, "-c", PROGRESS_OFF_A_TERMINAL]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    lines = r.stdout.splitlines()
    # rich's import (tens of ms) does not come before the hosts start (an upload's first byte)
    assert lines[0] == "before the first host ended, rich imported: False", r.stdout
    assert [line.split() for line in lines[1:]] == [["ok", "h1"], ["failed", "h2"]], r.stdout
