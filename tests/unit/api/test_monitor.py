"""Pure parts of `invoke monitor`: incremental line parsing, sample assembly, alerts."""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, Group
from rich.live_render import LiveRender
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gpuonboard.api import monitor
from gpuonboard.api.monitor import GpuSample, HostState, Thresholds
from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi import CLOCK_EVENT_REASONS, parse_table, parse_text_q
from gpuonboard.inventory import Host
from gpuonboard.testing.gpu_samples import csv_sample

# index, count, name, uuid, util, mem used, mem total, temp, power, limit, throttle mask, pstate
LOAD = (
    "0, 1, NVIDIA H200, GPU-00000000-0000-0000-0000-000000000000,"
    " 100, 32362, 143771, 52, 627.40, 700.00, 0x0000000000000000, P0"
)
IDLE = "0, 1, NVIDIA H100 80GB HBM3, GPU-1, 0, 0, 81559, 41, 69.85, 700.00, 0x0000000000000001, P0"


def row(index: int, count: int = 2, **kw: object) -> GpuSample:
    return GpuSample(host="h", ts=0.0, index=index, name="GPU", count=count, **kw)  # type: ignore[arg-type]


def test_split_lines_keeps_partial_lines_across_chunks() -> None:
    data = (LOAD + "\r\n" + IDLE + "\n").encode()
    buffer, lines = b"", []
    for i in range(0, len(data), 7):  # 7-byte chunks split lines and the CRLF
        got, buffer = monitor.split_lines(buffer, data[i : i + 7])
        lines += got
    assert lines == [LOAD, IDLE] and buffer == b""
    assert monitor.split_lines(b"", b"\n\n  \npartial") == ([], b"partial")
    assert monitor.split_lines(b"", b"x" * (monitor.MAX_LINE + 1)) == ([], b"")


def test_parse_line_reads_a_real_row() -> None:
    s = monitor.parse_line(LOAD, "h", 1.0)
    assert s is not None
    assert (s.index, s.count, s.name, s.util_pct, s.mem_used_mib, s.mem_total_mib) == (
        0,
        1,
        "NVIDIA H200",
        100,
        32362,
        143771,
    )
    assert (s.temp_c, s.power_w, s.power_limit_w, s.throttle, s.pstate) == (52, 627.4, 700.0, (), "P0")
    idle = monitor.parse_line(IDLE, "h", 1.0)
    assert idle is not None and idle.throttle == ("gpu_idle",)
    assert round(s.mem_pct or 0, 1) == 22.5


@pytest.mark.parametrize(
    "text",
    [
        "No devices were found",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that",
        "index, count, name, uuid, utilization.gpu, memory.used, memory.total, temperature.gpu, power.draw,"
        " enforced.power.limit, clocks_throttle_reasons.active, pstate",
        "0, 1, NVIDIA H200",
        "",
    ],
)
def test_parse_line_ignores_anything_else(text: str) -> None:
    assert monitor.parse_line(text, "h", 0.0) is None


def test_parse_line_maps_na_to_none() -> None:
    text = "0, 1, Tesla T4, GPU-2, [N/A], 10, 15360, 40, [N/A], [N/A], [N/A], P8"
    s = monitor.parse_line(text, "h", 0.0)
    assert s is not None and s.util_pct is None and s.power_w is None and s.throttle == ()


def test_assemble_groups_gpus_into_samples() -> None:
    done, pending = monitor.assemble((), row(0))
    assert done is None
    done, pending = monitor.assemble(pending, row(1))
    assert done is not None and [s.index for s in done] == [0, 1] and pending == ()
    # count unknown: a lower index starts the next sample
    done, pending = monitor.assemble((), row(0, count=0))
    done, pending = monitor.assemble(pending, row(1, count=0))
    assert done is None
    done, pending = monitor.assemble(pending, row(0, count=0))
    assert done is not None and [s.index for s in done] == [0, 1] and [s.index for s in pending] == [0]
    # a GPU missing from a sample: the next index 0 closes the short one
    done, pending = monitor.assemble((), row(0, count=3))
    done, pending = monitor.assemble(pending, row(0, count=3))
    assert done is not None and len(done) == 1


def test_parse_processes_picks_the_biggest_per_gpu() -> None:
    text = (
        "GPU-a, 10, /usr/bin/python3, 1000\n"
        "GPU-a, 11, /opt/conda/bin/python, 30000\n"
        "GPU-b, 12, torchrun, [N/A]\n"
        "No running processes found\n"
    )
    assert monitor.parse_processes(text) == {"GPU-a": "11 python (30000 MiB)", "GPU-b": "12 torchrun"}


def test_gpu_alerts() -> None:
    t = Thresholds(expect_busy=True)
    calm = row(0, util_pct=90, mem_used_mib=1000, mem_total_mib=80000, temp_c=60, throttle=("sw_power_cap",))
    assert monitor.gpu_alerts(calm, t) == ()
    bad = row(
        0,
        util_pct=2,
        mem_used_mib=79000,
        mem_total_mib=81000,
        temp_c=88,
        throttle=("gpu_idle", "hw_thermal_slowdown", "hw_slowdown"),
    )
    assert monitor.gpu_alerts(bad, t) == (
        "throttled: hw_slowdown,hw_thermal_slowdown",
        "temperature 88C >= 85C",
        "memory 98% > 95%",
        "idle (2%) while a job is expected",
    )
    assert "idle" not in " ".join(monitor.gpu_alerts(bad, Thresholds()))  # no job expected
    assert monitor.gpu_alerts(row(0), t) == ()  # nothing known, nothing claimed


def test_host_alerts() -> None:
    assert monitor.host_alerts(7, 8) == ("GPU missing: 7 of 8 ordered",)
    assert monitor.host_alerts(8, 8) == ()
    assert monitor.host_alerts(3, None, reported=4) == ("GPU missing: 3 of 4 reported",)
    assert monitor.host_alerts(4, None, reported=4) == ()


def test_thresholds_from_host_vars() -> None:
    host = Host("h", "10.0.0.1", vars={"expect_busy": "yes", "monitor_temp_c": 80, "monitor_mem_pct": "90"})
    assert Thresholds.for_host(host) == Thresholds(mem_pct=90, temp_c=80, idle_util_pct=5, expect_busy=True)
    with pytest.raises(UsageError):
        Thresholds.for_host(Host("h", "10.0.0.1", vars={"monitor_temp_c": "hot"}))


def test_commands() -> None:
    assert monitor.loop_args(2) == ["-l", "2"]
    assert monitor.loop_args(0.5) == ["-lms", "500"]
    assert monitor.loop_args(1.5) == ["-lms", "1500"]
    cmd = monitor.stream_command(2)
    assert cmd.startswith("sh -c ")
    script = shlex.split(cmd)[2]
    assert "nvidia-smi --query-gpu=index,count,name,uuid," in script
    assert "--format=csv,noheader,nounits -l 2 &" in script
    assert "kill $p" in script  # the watcher ends it when our channel closes


def test_table_marks_stale_hosts() -> None:
    live = monitor.HostState(
        "a", status="live", gpus={0: row(0, util_pct=50, mem_used_mib=1, mem_total_mib=2)}
    )
    stale = monitor.HostState("b", status="stale", error="connection refused", retry_at=10.0)
    con = Console(width=200, record=True)
    con.print(monitor.render_table([live, stale], 2, now=8.0))
    text = con.export_text()
    assert "b STALE, retry in 2s" in text and "connection refused" in text and "50%" in text
    assert "every 2s" in text
    # --once: one sample, not "every 0s"; a used memory of [N/A] is "?", not a made-up 0
    na = monitor.HostState("c", status="live", gpus={0: row(0, mem_used_mib=None, mem_total_mib=81920)})
    con = Console(width=200, record=True)
    con.print(monitor.render_table([na], 0))
    text = con.export_text()
    assert "GPU monitor (one sample)" in text and "?/81920 MiB" in text and "0/81920" not in text


def test_sample_json_and_log_reader() -> None:
    s = row(0, util_pct=5, alerts=("x",))
    doc = s.to_json()
    assert doc["alerts"] == ["x"] and doc["host"] == "h" and "time" in doc
    lines = [json.dumps(doc), json.dumps({"host": "h", "event": "stale"}), ""]
    assert monitor.iter_log(lines) == [doc]


def _eight_gpus(hot: int) -> monitor.HostState:
    """8 real H200 rows (LOAD), GPU `hot` at 88C, one GPU fewer than ordered."""
    base = monitor.parse_line(LOAD, "wuhan-h200-1", 0.0)
    assert base is not None
    gpus = {}
    for i in range(8):
        s = replace(base, index=i, count=8, temp_c=88 if i == hot else base.temp_c)
        gpus[i] = replace(s, alerts=monitor.gpu_alerts(s, Thresholds()))
    return monitor.HostState(
        "wuhan-h200-1", status="live", gpus=gpus, alerts=("GPU missing: 8 of 9 ordered",)
    )


@pytest.mark.parametrize("width", [80, 100, 120])
def test_table_on_a_narrow_terminal_keeps_util_temp_and_every_alert(width: int) -> None:
    """At 80-120 columns rich squeezed util and temp to '…' and the alerts column to nothing:
    a GPU at 88C showed no alert at all."""
    con = Console(width=width, record=True)
    con.print(monitor.render_table([_eight_gpus(hot=5)], 2, now=0.0, width=width))
    text = con.export_text()
    assert max(len(x) for x in text.splitlines()) <= width
    assert text.count("100%") == 8 and text.count("52C") == 7 and "88C" in text
    assert "temperature 88C >= 85C" in text and "GPU missing: 8 of 9 ordered" in text
    assert "…" not in text


def test_table_on_a_wide_terminal_has_every_column() -> None:
    con = Console(width=200, record=True)
    con.print(monitor.render_table([_eight_gpus(hot=5)], 2, now=0.0, width=200))
    text = con.export_text()
    header = next(x for x in text.splitlines() if "util" in x)
    for col in monitor.COLUMNS:
        assert col in header
    row = next(x for x in text.splitlines() if "5 H200" in x)
    assert "temperature 88C >= 85C" in row  # in its row, not below the table


def test_stale_host_reason_is_shown_below_a_narrow_table() -> None:
    stale = _eight_gpus(hot=-1)
    stale.status, stale.error, stale.retry_at = "stale", "nvidia-smi exited 9: NVIDIA-SMI has failed", 5.0
    con = Console(width=80, record=True)
    con.print(monitor.render_table([stale], 2, now=0.0, width=80))
    text = " ".join(con.export_text().split())
    assert "STALE" in text and "wuhan-h200-1: nvidia-smi exited 9: NVIDIA-SMI has failed" in text


@pytest.mark.parametrize(
    ("status", "detail", "reason"),
    [
        (127, "sh: 1: nvidia-smi: not found", "nvidia-smi exited 127: sh: 1: nvidia-smi: not found"),
        (0, None, "nvidia-smi exited 0"),
        (None, "", "the nvidia-smi stream ended"),
        (None, "x" * 1000, "the nvidia-smi stream ended: " + "x" * (monitor.MAX_DETAIL - 3) + "..."),
    ],
)
def test_stream_end_reason_says_what_the_host_said(
    status: int | None, detail: str | None, reason: str
) -> None:
    assert monitor.stream_end_reason(status, detail) == reason


# `invoke monitor`'s table layout: which columns fit the terminal, decided from the cells'
# display widths once per refresh, must print exactly what rich's own measuring decided.
#
# The reference below is render_table as it was before (it built a rich table and measured it
# with rich again for every column it tried to drop: ~125 ms per refresh of 256 GPUs); the new
# one must print the same bytes (text and styles) for the same data and terminal width.

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
THROTTLED_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
PROCESSES = REAL / "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"
# real --query-gpu rows (index, count, name, uuid, util, mem used/total, temp, power, limit,
# throttle mask, pstate): the loaded H200 and idle H100 captures the monitor tests replay
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


# `invoke monitor` prints text from the rented box: the top process's name (any user of a shared
# box names their own programs), the host's own words for a stale stream. An ESC in them reached
# the terminal as it was, rich passes it through: an OSC 52 sequence writes the user's clipboard,
# others set the window title or move the cursor over earlier output. Now it is written `\x1b`,
# as everywhere else the tool prints a host's text (termtext.for_terminal).
#
# The rows are the real loaded H200 `--query-gpu` capture and the real `--query-compute-apps`
# capture of the MIG H200 (its biggest process `./gpu_burn`), that process's name edited to hold
# the sequence.

FIXTURES = Path(__file__).parents[2] / "fixtures"
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


# `invoke monitor` on a GPU nvidia-smi lists but cannot read (a GPU that needs a reset, or is
# lost, after an Xid): its cells read `[GPU requires reset]`.
#
# Before, such a row became a calm row of dashes with no alert (the name was still readable), or,
# with the name unreadable too, vanished, and a one-GPU host kept showing its last healthy values.
# The line is the real idle H100 `--query-gpu` capture in the monitor's field order, with the
# minimal edit of tests/unit/steps/checks/test_gpu_health_unreadable.py (every cell but the kept ones reads
# `[GPU requires reset]`, as nvidia-smi prints it for such a GPU).

H100_CSV = (
    Path(__file__).parents[2]
    / "fixtures"
    / "real"
    / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
)


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


# `invoke monitor` on more GPUs than the terminal has lines: 32 hosts x 8 real GPUs (idle,
# loaded, throttled captures; a job expected; one host stale, one short of its order).
#
# The live view (rich Live) shows the top of what is taller than the terminal and `...`: every
# alert sat in the alerts column of rows below the screen, or below the table (a terminal too
# narrow for that column), so a user watching 256 GPUs on a 50-line terminal saw no alert and no
# STALE host at all. Now a table taller than the terminal has its alerts above it, one line per
# host and alert text.


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


# `invoke monitor` with more alert lines than the terminal has lines: the alerts above a tall
# table were cut off at the bottom of the live view without a word (64 hosts x 8 real GPUs on a
# 50-line terminal). Now what does not fit is counted on the last line shown, and the table's
# header stays in view.


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
