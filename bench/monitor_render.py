#!/usr/bin/env python3
"""Monitor table benchmark: CPU per refresh of `invoke monitor`'s live table.

Usage: .venv/bin/python bench/monitor_render.py [--widths 80 120 200] [--reps 30]

Builds the table of 256 GPUs on 32 simulated hosts (8 each) from real captured nvidia-smi
outputs (the ones the monitor tests replay: an idle H100 and a loaded H200 `--query-gpu` CSV,
GPU 0 of the 8xH100 `-q` capture with HW Slowdown + HW Power Brake active, and the
processes of the loaded H200 capture), with their alerts and one stale host, then prints per
terminal width the median milliseconds of

- `render_table`: what the monitor does on every refresh to lay the table out for the
  terminal (which columns fit, the table itself);
- `refresh`: that plus rich drawing the table into a terminal of that width, as `rich.live`
  does on each refresh.

No root, no network, no SSH: pure CPU, in this process.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from rich.console import Console  # noqa: E402

from gpuonboard.api import monitor  # noqa: E402
from gpuonboard.facts.nvidia_smi import parse_table  # noqa: E402
from gpuonboard.testing.gpu_samples import csv_sample, q_sample  # noqa: E402

REAL = REPO / "tests" / "fixtures" / "real"
IDLE_CSV = REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
LOAD_CSV = REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"
THROTTLED_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
PROCESSES = REAL / "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"
ALIASES = {"clocks_throttle_reasons.active": "clocks_event_reasons.active"}
HOSTS, GPUS = 32, 8


def throttled_sample() -> dict[str, str]:
    """GPU 0 of the real 8xH100 -q capture, in --query-gpu terms."""
    return q_sample(THROTTLED_Q)


def top_processes() -> list[str]:
    """The real processes of the loaded H200 capture, as the monitor labels them."""
    procs = parse_table(PROCESSES.read_text()).gpus[0].processes
    text = "".join(f"GPU-{i}, {p.pid}, {p.name}, {p.used_memory_mib}\n" for i, p in enumerate(procs))
    return sorted(monitor.parse_processes(text).values())


def states() -> list[monitor.HostState]:
    """32 hosts x 8 GPUs: idle, loaded and throttled hosts, a job expected everywhere, one
    host stale (its last values dimmed, the host's own reason), one GPU short of its order."""
    lines = [csv_sample(IDLE_CSV), csv_sample(LOAD_CSV), throttled_sample()]
    bases = []
    for fields in lines:
        text = ", ".join(fields[ALIASES.get(f, f)] for f in monitor.MONITOR_FIELDS)
        parsed = monitor.parse_line(text, "h", 0.0)
        assert parsed is not None, text
        bases.append(parsed)
    procs = top_processes()
    busy = monitor.Thresholds(expect_busy=True)
    out = []
    for h in range(HOSTS):
        name = f"wuhan-{'h100' if h % 3 != 1 else 'h200'}-{h + 1:02d}"
        base = bases[h % 3]
        gpus = {}
        for i in range(GPUS):
            s = replace(base, host=name, index=i, count=GPUS, top_process=procs[(h + i) % len(procs)])
            gpus[i] = replace(s, alerts=monitor.gpu_alerts(s, busy))
        st = monitor.HostState(name, status="live", gpus=gpus, gpus_seen=GPUS)
        if h == 7:
            st.alerts = monitor.host_alerts(GPUS, GPUS + 1)
        if h == 13:
            st.status, st.retry_at = "stale", 12.0
            st.error = monitor.stream_end_reason(
                9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
            )
        out.append(st)
    return out


def median_ms(fn: Callable[[], object], reps: int) -> float:
    """Median wall milliseconds of fn() over reps calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[80, 120, 200])
    ap.add_argument("--reps", type=int, default=30, help="refreshes per width (median)")
    args = ap.parse_args()
    snap = states()
    gpus = sum(len(s.gpus) for s in snap)
    print(f"{gpus} GPUs on {len(snap)} hosts, median of {args.reps} refreshes")
    print(f"{'width':>5}  {'render_table ms':>15}  {'refresh ms':>10}  columns")
    for width in args.widths:
        con = Console(width=width, file=io.StringIO(), force_terminal=True, color_system="truecolor")

        def layout(w: int = width) -> object:
            return monitor.render_table(snap, 2.0, now=10.0, width=w)

        def refresh(c: Console = con, w: int = width) -> None:
            c.file = io.StringIO()
            c.print(monitor.render_table(snap, 2.0, now=10.0, width=w))

        probe = Console(width=width, record=True, file=io.StringIO())
        probe.print(layout())
        header = next((x for x in probe.export_text().splitlines() if "util" in x), "")
        shown = " ".join(c for c in monitor.COLUMNS if c in header)
        if "alerts" not in shown:
            shown += " (alerts below the table)"
        layout_ms, refresh_ms = median_ms(layout, args.reps), median_ms(refresh, args.reps)
        print(f"{width:>5}  {layout_ms:>15.1f}  {refresh_ms:>10.1f}  {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
