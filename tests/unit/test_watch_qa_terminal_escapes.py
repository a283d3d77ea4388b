"""`invoke monitor` prints text from the rented box: the top process's name (any user of a shared
box names their own programs), the host's own words for a stale stream. An ESC in them reached
the terminal as it was, rich passes it through: an OSC 52 sequence writes the user's clipboard,
others set the window title or move the cursor over earlier output. Now it is written `\\x1b`,
as everywhere else the tool prints a host's text (termtext.for_terminal).

The rows are the real loaded H200 `--query-gpu` capture and the real `--query-compute-apps`
capture of the MIG H200 (its biggest process `./gpu_burn`), that process's name edited to hold
the sequence."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from gpuonboard.api import monitor
from gpuonboard.api.monitor import HostState
from gpuonboard.testing.gpu_samples import csv_sample

FIXTURES = Path(__file__).parents[1] / "fixtures"
LOAD_CSV = FIXTURES / "real" / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"
APPS = FIXTURES / "compute-apps" / "nvidia-smi-query-compute-apps__h200-mig__1gpu__driver590.48.01__load.csv"
ALIASES = {"clocks_throttle_reasons.active": "clocks_event_reasons.active"}
OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"  # "write `rm -rf ~` to the clipboard"
CLEAR = "\x1b[2J\x1b[H"


def apps_nounits(name_suffix: str) -> str:
    """The capture's rows in the monitor's fields and form (noheader, nounits)."""
    rows = []
    for row in APPS.read_text().splitlines()[1:]:
        cells = [c.strip() for c in row.split(",")]
        uuid, pid, name, mem = cells[4], cells[5], cells[6], cells[7].removesuffix(" MiB")
        rows.append(f"{uuid}, {pid}, {name + name_suffix if name == './gpu_burn' else name}, {mem}")
    return "\n".join(rows) + "\n"


def render(states: list[HostState], width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=False, color_system=None).print(
        monitor.render_table(states, 2.0, width=width)
    )
    return out.getvalue()


def live_state() -> HostState:
    sample = csv_sample(LOAD_CSV)
    line = ", ".join(sample[ALIASES.get(f, f)] for f in monitor.MONITOR_FIELDS)
    s = monitor.parse_line(line, "h1", 0.0)
    assert s is not None
    procs = monitor.parse_processes(apps_nounits(OSC52 + CLEAR))
    assert "12267 gpu_burn" in procs[s.uuid or ""]  # the real capture's biggest process
    st = HostState("h1", status="live")
    st.gpus = {0: replace(s, top_process=procs[s.uuid or ""])}
    return st


@pytest.mark.parametrize("width", [250, 80])
def test_a_process_name_with_escape_sequences_never_reaches_the_terminal(width: int) -> None:
    st = live_state()
    text = render([st], 250)
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert "\\x1b]52;c;" in text  # (shown, harmless)
    render([st], width)  # (narrow: the column is left out, nothing breaks)


def test_a_stale_reason_with_escape_sequences_never_reaches_the_terminal() -> None:
    st = live_state()
    st.status, st.error = "stale", f"nvidia-smi exited 9: {CLEAR}NVIDIA-SMI has failed{OSC52}"
    for width in (250, 80):  # (in the alerts column; below a narrow table)
        text = render([st], width)
        assert "\x1b" not in text and "\x07" not in text, repr(text)
        assert "NVIDIA-SMI has" in text
