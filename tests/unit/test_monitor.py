"""Pure parts of `invoke monitor`: incremental line parsing, sample assembly, alerts."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

import pytest
from rich.console import Console

from gpuonboard.api import monitor
from gpuonboard.api.monitor import GpuSample, Thresholds
from gpuonboard.errors import UsageError
from gpuonboard.inventory import Host

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
