"""`invoke monitor` with more alert lines than the terminal has lines: the alerts above a tall
table were cut off at the bottom of the live view without a word (64 hosts x 8 real GPUs on a
50-line terminal). Now what does not fit is counted on the last line shown, and the table's
header stays in view."""

from __future__ import annotations

import pytest

from gpuonboard.api import monitor

from .test_monitor_layout import fleet
from .test_watch_qa_tall_fleet import live_frame


@pytest.mark.parametrize("width", [80, 200])
def test_alerts_that_do_not_fit_the_screen_are_counted_not_cut(width: int) -> None:
    states = fleet(64)
    every = monitor.alert_lines(states, per_alert=True)
    assert len(every) > 50  # (the fleet really has more alerts than the screen has lines)
    shown = live_frame(monitor.render_table(states, 2, now=10.0, width=width, height=50), width, 50)
    assert len(shown) <= 50
    more = [line for line in shown if line.startswith("... and ")]
    assert len(more) == 1, shown
    hidden = int(more[0].split()[2])
    frame = " ".join(" ".join(shown).split())
    listed = [line for line in every if " ".join(line.split()) in frame]
    assert listed == every[: len(every) - hidden]  # the first ones, in order; the count is exact
    assert more[0].endswith("more alert lines: `invoke monitor --once` prints every one")
    assert any("util" in line and "temp" in line for line in shown)  # the table's header is in view


def test_alerts_that_fit_are_all_shown() -> None:
    lines = [f"h{i}: GPU missing: 7 of 8 ordered" for i in range(10)]
    assert monitor.fit_alerts(lines, 80, 50) == lines
    assert monitor.fit_alerts(lines, 80, 10) == [
        *lines[:3],
        "... and 7 more alert lines: `invoke monitor --once` prints every one",
    ]
