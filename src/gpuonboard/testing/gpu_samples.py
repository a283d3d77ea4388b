"""GPU samples in `nvidia-smi --query-gpu` terms, taken from real captured outputs: what the
monitor's replayed hosts print (tests) and what its benchmark lays out (bench/monitor_render.py)."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from gpuonboard.facts.nvidia_smi import CLOCK_EVENT_REASONS, parse_text_q

UNIT = re.compile(r"\s+(W|MiB|%|MHz|us|ms)$")


def csv_sample(path: Path) -> dict[str, str]:
    """A real full --query-gpu capture (header + one row) as field -> value, units dropped."""
    header, row = list(csv.reader(io.StringIO(path.read_text()), skipinitialspace=True))[:2]
    names = [re.sub(r"\s*\[[^\]]*\]$", "", h).strip() for h in header]
    return {n: UNIT.sub("", v.strip()) for n, v in zip(names, row, strict=True)}


def q_sample(path: Path, gpu: int = 0) -> dict[str, str]:
    """One GPU of a real `nvidia-smi -q` capture, in --query-gpu terms (count 1: one GPU)."""
    g = parse_text_q(path.read_text()).gpus[gpu]
    mask = sum(1 << CLOCK_EVENT_REASONS.index(r) for r in g.clock_event_reasons)
    return {
        "index": "0",
        "count": "1",
        "name": g.name,
        "uuid": g.uuid or "",
        "utilization.gpu": str(g.utilization_gpu_pct),
        "memory.used": str(g.memory_used_mib),
        "memory.total": str(g.memory_total_mib),
        "temperature.gpu": str(g.temperature_c),
        "power.draw": f"{g.power_draw_w:.2f}",
        "enforced.power.limit": f"{g.power_limit_w:.2f}",
        "clocks_event_reasons.active": f"0x{mask:016X}",
        "pstate": g.performance_state or "",
    }
