"""`invoke monitor`'s table layout: which columns fit the terminal, decided from the cells'
display widths once per refresh, must print exactly what rich's own measuring decided.

The reference below is render_table as it was before (it built a rich table and measured it
with rich again for every column it tried to drop: ~125 ms per refresh of 256 GPUs); the new
one must print the same bytes (text and styles) for the same data and terminal width.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gpuonboard.api import monitor
from gpuonboard.api.monitor import GpuSample, HostState, Thresholds
from gpuonboard.facts.nvidia_smi import CLOCK_EVENT_REASONS, parse_table, parse_text_q

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
THROTTLED_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
PROCESSES = REAL / "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"
# real --query-gpu rows (index, count, name, uuid, util, mem used/total, temp, power, limit,
# throttle mask, pstate): the loaded H200 and idle H100 captures the monitor tests replay
LOAD = (
    "0, 1, NVIDIA H200, GPU-00000000-0000-0000-0000-000000000000,"
    " 100, 32362, 143771, 52, 627.40, 700.00, 0x0000000000000000, P0"
)
IDLE = "0, 1, NVIDIA H100 80GB HBM3, GPU-1, 0, 0, 81559, 41, 69.85, 700.00, 0x0000000000000001, P0"
NA = "0, 1, Tesla T4, GPU-2, [N/A], 10, 15360, 40, [N/A], [N/A], [N/A], P8"


# ------------------------------------------------------------------ the old layout (reference)


def _old_table(states: Sequence[HostState], interval: float, now: float, columns: Sequence[str]) -> Any:
    every = f"every {interval:g}s; Ctrl-C to quit" if interval > 0 else "one sample"
    t = Table(title=f"GPU monitor ({every})", title_justify="left")
    for col in columns:
        t.add_column(col, no_wrap=col not in monitor._WRAPPING)
    for st in states:
        stale = st.status != "live"
        if stale:
            wait = f", retry in {max(0.0, st.retry_at - now):.0f}s" if st.retry_at else ""
            label = Text(f"{st.name} {st.status.upper()}{wait}", style="bold magenta")
        else:
            label = Text(st.name)
        host_alert = monitor._host_alert(st)
        if not st.gpus:
            cells = {c: Text("-") for c in columns}
            cells.update(host=label, alerts=Text(host_alert, style="red"))
            t.add_row(*(cells[c] for c in columns))
            continue
        style = "dim" if stale else ""
        for i, (_, s) in enumerate(sorted(st.gpus.items())):
            alerts = "; ".join(s.alerts + ((host_alert,) if host_alert and i == 0 else ()))
            cells = {c: Text(v, style=style) for c, v in monitor._gpu_cells(s).items()}
            cells.update(
                host=label if i == 0 else Text(""), alerts=Text(alerts, style="bold red" if alerts else "")
            )
            t.add_row(*(cells[c] for c in columns))
    return t


def _old_width(renderable: Any) -> int:
    con = Console(width=10_000, file=io.StringIO())
    return int(Measurement.get(con, con.options, renderable).maximum)


def old_render_table(states: Sequence[HostState], interval: float, now: float, width: int | None) -> Any:
    columns = list(monitor.COLUMNS)
    table = _old_table(states, interval, now, columns)
    if width is None:
        return table
    for drop in monitor.OPTIONAL_COLUMNS:
        if _old_width(table) <= width:
            return table
        columns.remove(drop)
        table = _old_table(states, interval, now, columns)
    if _old_width(table) <= width:
        return table
    columns.remove("alerts")
    table = _old_table(states, interval, now, columns)
    lines = [Text(line, style="bold red") for line in monitor.alert_lines(states)]
    return Group(table, *lines) if lines else table


# ------------------------------------------------------------------ data


def _sample(line: str, host: str) -> GpuSample:
    s = monitor.parse_line(line, host, 0.0)
    assert s is not None
    return s


def _throttled_line() -> str:
    """GPU 0 of the real 8xH100 -q capture (HW Slowdown + HW Power Brake), as a query row."""
    g = parse_text_q(THROTTLED_Q.read_text()).gpus[0]
    mask = sum(1 << CLOCK_EVENT_REASONS.index(r) for r in g.clock_event_reasons)
    return (
        f"0, 1, {g.name}, {g.uuid}, {g.utilization_gpu_pct}, {g.memory_used_mib}, {g.memory_total_mib},"
        f" {g.temperature_c}, {g.power_draw_w:.2f}, {g.power_limit_w:.2f}, 0x{mask:016X},"
        f" {g.performance_state}"
    )


def _processes() -> list[str]:
    procs = parse_table(PROCESSES.read_text()).gpus[0].processes
    text = "".join(f"GPU-{i}, {p.pid}, {p.name}, {p.used_memory_mib}\n" for i, p in enumerate(procs))
    return sorted(monitor.parse_processes(text).values())


def _host(name: str, line: str, gpus: int, busy: bool = True, **kw: Any) -> HostState:
    base = _sample(line, name)
    procs = _processes()
    t = Thresholds(expect_busy=busy)
    out = {}
    for i in range(gpus):
        s = replace(base, index=i, count=gpus, top_process=procs[i % len(procs)])
        out[i] = replace(s, alerts=monitor.gpu_alerts(s, t))
    return HostState(name, status=kw.pop("status", "live"), gpus=out, gpus_seen=gpus, **kw)


def fleet(hosts: int) -> list[HostState]:
    """`hosts` x 8 real GPUs (idle, loaded, throttled), one stale, one short of its order."""
    lines = [IDLE, LOAD, _throttled_line()]
    states = [_host(f"wuhan-node-{h + 1:02d}", lines[h % 3], 8) for h in range(hosts)]
    states[0].alerts = monitor.host_alerts(8, 9)
    if hosts > 2:
        states[2].status, states[2].retry_at = "stale", 12.0
        states[2].error = monitor.stream_end_reason(
            9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
        )
    return states


def odd_hosts() -> list[HostState]:
    """Cells rich measures in its own way: wide (CJK) characters, several lines, control
    characters, tabs, empty cells, hosts without GPUs yet, a [N/A] GPU, no alerts at all."""
    cjk = _host("训练-节点-1", LOAD, 2, busy=False)
    cjk.gpus[1] = replace(cjk.gpus[1], top_process="4242 训练脚本.py (30000 MiB)")
    multi = HostState(
        "lab-2",
        status="stale",
        retry_at=3.0,
        error="ssh: connect failed\nsecond line: the host's own words, longer than any other alert here",
    )
    ctrl = HostState("lab-3", status="stale", error="nvidia-smi exited 1: bad\x07\r\x1b[31mred\ttab")
    waiting = HostState("lab-4")  # connecting: no GPUs, no alerts yet
    na = _host("t4-box", NA, 1, busy=False)
    calm = _host("calm", IDLE, 1, busy=False)
    return [cjk, multi, ctrl, waiting, na, calm]


def rendered(renderable: Any, width: int) -> str:
    con = Console(width=width, record=True, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    con.print(renderable)
    return con.export_text(styles=True)


# ------------------------------------------------------------------ tests

CASES = {
    "one-host": lambda: fleet(1),
    "four-hosts": lambda: fleet(4),
    "odd": odd_hosts,
    "calm-only": lambda: [_host("calm", IDLE, 2, busy=False)],
    "empty": list,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_layout_is_the_one_rich_measured_at_every_width(case: str) -> None:
    states = CASES[case]()
    for width in [*range(10, 241, 3), 300, None]:
        want = old_render_table(states, 2, 10.0, width)
        got = monitor.render_table(states, 2, now=10.0, width=width)
        w = 200 if width is None else width
        assert rendered(got, w) == rendered(want, w), f"{case} at width {width}"


@pytest.mark.parametrize("width", [80, 100, 120, 160, 200, 260])
def test_layout_of_256_gpus_is_unchanged(width: int) -> None:
    states = fleet(32)
    want = rendered(old_render_table(states, 2, 10.0, width), width)
    assert rendered(monitor.render_table(states, 2, now=10.0, width=width), width) == want


def test_column_decision_matches_rich_measure() -> None:
    """fit_columns on the cells' display widths picks the columns rich's measure picked."""
    for states in (fleet(4), odd_hosts()):
        widths = monitor.column_widths(monitor._rows(states, 10.0))
        for columns in (list(monitor.COLUMNS), ["host", "gpu", "util", "memory", "temp", "power", "alerts"]):
            assert monitor.table_width(widths, columns) == _old_width(_old_table(states, 2, 10.0, columns))


def test_a_refresh_measures_nothing_with_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refresh lays the table out from the cells' widths: rich measures no renderable (it
    measured the whole table up to four times per refresh, ~125 ms for 256 GPUs)."""
    calls: list[Any] = []
    real_get = Measurement.get.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Measurement], *args: Any) -> Measurement:
        calls.append(args[-1])
        return real_get(cls, *args)

    monkeypatch.setattr(Measurement, "get", classmethod(counting))
    states = fleet(4)
    for width in (80, 120, 200, 300):
        monitor.render_table(states, 2, now=10.0, width=width)
    assert calls == []


def test_text_width_counts_terminal_cells() -> None:
    assert monitor.text_width("") == 0
    assert monitor.text_width("52C") == 3
    assert monitor.text_width("训练") == 4  # wide characters take two cells
    assert monitor.text_width("short\nthe longer line") == len("the longer line")
