"""`invoke monitor` on a GPU nvidia-smi lists but cannot read (a GPU that needs a reset, or is
lost, after an Xid): its cells read `[GPU requires reset]`.

Before, such a row became a calm row of dashes with no alert (the name was still readable), or,
with the name unreadable too, vanished, and a one-GPU host kept showing its last healthy values.
The line is the real idle H100 `--query-gpu` capture in the monitor's field order, with the
minimal edit of tests/unit/test_gpu_truth_unreadable_gpu.py (every cell but the kept ones reads
`[GPU requires reset]`, as nvidia-smi prints it for such a GPU)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from gpuonboard.api import monitor
from gpuonboard.api.monitor import HostState, Thresholds
from gpuonboard.testing.gpu_samples import csv_sample

H100_CSV = (
    Path(__file__).parents[1]
    / "fixtures"
    / "real"
    / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
)
ALIASES = {"clocks_throttle_reasons.active": "clocks_event_reasons.active"}


def real_line(keep: set[str], fault: str = "[GPU requires reset]") -> str:
    sample = csv_sample(H100_CSV)
    cells = [sample[ALIASES.get(f, f)] if f in keep else fault for f in monitor.MONITOR_FIELDS]
    return ", ".join(cells)


def test_the_real_line_untouched_is_a_calm_sample() -> None:
    s = monitor.parse_line(real_line(set(monitor.MONITOR_FIELDS)), "h", 0.0)
    assert s is not None and s.faults == () and s.name == "NVIDIA H100 80GB HBM3"
    assert monitor.gpu_alerts(s, Thresholds()) == ()


@pytest.mark.parametrize(
    "keep",
    [{"index", "count", "name"}, {"index", "count"}, {"index"}],
    ids=["name-readable", "name-unreadable", "index-only"],
)
@pytest.mark.parametrize("fault", ["[GPU requires reset]", "[GPU is lost]"])
def test_a_gpu_nvidia_smi_cannot_read_is_an_alert_not_dashes(keep: set[str], fault: str) -> None:
    s = monitor.parse_line(real_line(keep, fault), "h", 0.0)
    assert s is not None, "a GPU in trouble vanished from the table"
    assert s.index == 0 and s.util_pct is None and s.temp_c is None and s.mem_total_mib is None
    word = fault.strip("[]")
    assert s.faults == (word,)
    assert monitor.gpu_alerts(s, Thresholds(expect_busy=True))[0] == f"unreadable: nvidia-smi reads {word}"
    assert s.to_json()["faults"] == [word]


def test_the_table_says_so_on_the_gpu_row() -> None:
    s = monitor.parse_line(real_line({"index", "count", "name"}), "h1", 0.0)
    assert s is not None
    st = HostState("h1", status="live")
    st.gpus = {0: replace(s, alerts=monitor.gpu_alerts(s, Thresholds()))}
    con = Console(width=200, record=True)
    con.print(monitor.render_table([st], 2.0, width=200))
    text = con.export_text()
    row = next(x for x in text.splitlines() if "H100 80GB HBM3" in x)
    assert "unreadable: nvidia-smi reads GPU requires reset" in row, text


@pytest.mark.parametrize(
    "text",
    [
        "Unable to determine the device handle for GPU0000:0B:00.0: Unknown Error",
        # a faulted row must still say which GPU it is about: no index, no sample
        real_line(set(), "[GPU is lost]"),
    ],
)
def test_lines_without_a_gpu_index_are_no_sample(text: str) -> None:
    assert monitor.parse_line(text, "h", 0.0) is None
