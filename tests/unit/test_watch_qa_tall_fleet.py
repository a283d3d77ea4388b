"""`invoke monitor` on more GPUs than the terminal has lines: 32 hosts x 8 real GPUs (idle,
loaded, throttled captures; a job expected; one host stale, one short of its order).

The live view (rich Live) shows the top of what is taller than the terminal and `...`: every
alert sat in the alerts column of rows below the screen, or below the table (a terminal too
narrow for that column), so a user watching 256 GPUs on a 50-line terminal saw no alert and no
STALE host at all. Now a table taller than the terminal has its alerts above it, one line per
host and alert text."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.live_render import LiveRender

from gpuonboard.api import monitor

from .test_monitor_layout import fleet, rendered


def live_frame(renderable: object, width: int, height: int) -> list[str]:
    """What rich Live shows on a width x height terminal: its top, cut with `...`."""
    con = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None)
    lines = con.render_lines(LiveRender(renderable, vertical_overflow="ellipsis"), con.options, pad=False)  # type: ignore[arg-type]
    return ["".join(seg.text for seg in line) for line in lines]


@pytest.mark.parametrize("width", [80, 120, 200, 260])
def test_the_alerts_of_256_gpus_are_at_the_top_of_a_50_line_screen(width: int) -> None:
    states = fleet(32)
    shown = live_frame(monitor.render_table(states, 2, now=10.0, width=width, height=50), width, 50)
    frame = " ".join(" ".join(shown).split())  # (a line wrapped on a narrow terminal, joined)
    assert f"{states[2].name}: nvidia-smi exited 9: NVIDIA-SMI has failed because" in frame  # stale
    assert f"{states[0].name}: GPU missing: 8 of 9 ordered" in frame
    # the idle capture's 8 GPUs in one line; the throttled capture's (hosts 3, 6, ...)
    assert f"{states[0].name} gpu 0,1,2,3,4,5,6,7: idle (0%) while a job is expected" in frame
    assert f"{states[5].name} gpu 0,1,2,3,4,5,6,7: throttled: hw_power_brake_slowdown,hw_slowdown" in frame


def test_a_table_that_fits_the_terminal_is_unchanged() -> None:
    states = fleet(4)
    for width in (80, 200):
        tall = monitor.render_table(states, 2, now=10.0, width=width, height=200)
        assert rendered(tall, width) == rendered(
            monitor.render_table(states, 2, now=10.0, width=width), width
        )
