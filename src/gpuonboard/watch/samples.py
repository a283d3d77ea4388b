"""The monitor's samples: one GPU of one host per `nvidia-smi --query-gpu` CSV line, parsed
by pure functions (split_lines, parse_line), grouped into whole samples (assemble), the top
process per GPU (parse_processes), and what the monitor knows about a host now (HostState).

No I/O here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gpuonboard.facts.csvtext import csv_rows
from gpuonboard.facts.nvidia_smi import parse_query_csv

# Every name accepted by --query-gpu from R450 upward (see facts.nvidia_smi.QUERY_FIELDS).
MONITOR_FIELDS: tuple[str, ...] = (
    "index",
    "count",
    "name",
    "uuid",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "temperature.gpu",
    "power.draw",
    "enforced.power.limit",
    "clocks_throttle_reasons.active",
    "pstate",
)
PROCESS_FIELDS: tuple[str, ...] = ("gpu_uuid", "pid", "process_name", "used_memory")

MAX_LINE = 1 << 16


@dataclass(frozen=True)
class GpuSample:
    """One GPU in one sample of one host."""

    host: str
    ts: float  # wall-clock seconds when the line arrived
    index: int
    name: str
    uuid: str | None = None
    count: int | None = None  # GPUs nvidia-smi says the host has
    util_pct: int | None = None
    mem_used_mib: int | None = None
    mem_total_mib: int | None = None
    temp_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    throttle: tuple[str, ...] = ()
    pstate: str | None = None
    top_process: str | None = None
    alerts: tuple[str, ...] = ()
    # what nvidia-smi printed instead of values it cannot read ("GPU requires reset", "GPU is
    # lost", "ERR!"; facts.nvidia_smi.FAULT_WORDS): a GPU in trouble, never a calm row of dashes
    faults: tuple[str, ...] = ()

    @property
    def mem_pct(self) -> float | None:
        """Memory used in percent of total, or None."""
        if self.mem_used_mib is None or not self.mem_total_mib:
            return None
        return 100.0 * self.mem_used_mib / self.mem_total_mib

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (ts as epoch seconds, and as RFC 3339 in UTC with milliseconds)."""
        doc = asdict(self)
        doc["throttle"] = list(self.throttle)
        doc["alerts"] = list(self.alerts)
        doc["faults"] = list(self.faults)
        doc["time"] = (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.ts)) + f".{int(self.ts % 1 * 1000):03d}Z"
        )
        return doc


def split_lines(buffer: bytes, chunk: bytes) -> tuple[list[str], bytes]:
    """Append chunk to the unfinished buffer; return complete lines (decoded, stripped of
    CR/LF, blank ones dropped) and the new unfinished rest. A rest longer than MAX_LINE is
    dropped (not nvidia-smi output)."""
    data = buffer + chunk
    *complete, rest = data.split(b"\n")
    if len(rest) > MAX_LINE:
        rest = b""
    lines = [raw.decode("utf-8", "replace").strip("\r ") for raw in complete]
    return [line for line in lines if line], rest


def parse_line(line: str, host: str, ts: float, fields: Sequence[str] = MONITOR_FIELDS) -> GpuSample | None:
    """One `--format=csv,noheader,nounits` line -> a sample, or None for anything else
    (an error message, a header, a line with the wrong number of cells or without a GPU index).
    A GPU nvidia-smi cannot read (`[GPU requires reset]` in its cells) is a sample with faults."""
    if line.count(",") != len(fields) - 1:
        return None
    cells = (csv_rows(line, skipinitialspace=False) or [[]])[0] if line else []
    if "index" in fields and not (
        len(cells) == len(fields) and cells[fields.index("index")].strip().isdecimal()
    ):
        return None  # (a header; and a faulted row still needs the GPU it is about)
    report = parse_query_csv(line + "\n", fields)
    if len(report.gpus) != 1:
        return None
    gpu = report.gpus[0]
    if not (
        gpu.name or gpu.utilization_gpu_pct is not None or gpu.memory_total_mib is not None or gpu.faults
    ):
        return None  # e.g. "No devices were found" split at its commas
    return GpuSample(
        host=host,
        ts=ts,
        index=gpu.index,
        name=gpu.name,
        uuid=gpu.uuid,
        count=report.attached_gpus,
        util_pct=gpu.utilization_gpu_pct,
        mem_used_mib=gpu.memory_used_mib,
        mem_total_mib=gpu.memory_total_mib,
        temp_c=gpu.temperature_c,
        power_w=gpu.power_draw_w,
        power_limit_w=gpu.power_limit_w,
        throttle=gpu.clock_event_reasons,
        pstate=gpu.performance_state,
        faults=gpu.faults,
    )


def assemble(
    pending: tuple[GpuSample, ...], sample: GpuSample
) -> tuple[tuple[GpuSample, ...] | None, tuple[GpuSample, ...]]:
    """Group GPU lines into whole samples: (a finished sample or None, the new pending).

    nvidia-smi -l prints every GPU once per interval in index order, so a sample is done
    when it holds `count` GPUs, or when an index not above the last one starts the next.
    """
    done: tuple[GpuSample, ...] | None = None
    if pending and sample.index <= pending[-1].index:
        done, pending = pending, ()
    pending = (*pending, sample)
    if sample.count and len(pending) >= sample.count:
        return pending if done is None else done, () if done is None else pending
    return done, pending


def parse_processes(text: str) -> dict[str, str]:
    """`--query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits`
    -> the biggest process per GPU uuid, as `pid name (N MiB)`."""
    best: dict[str, tuple[int, str]] = {}
    for row in csv_rows(text) or []:
        if len(row) != len(PROCESS_FIELDS):
            continue
        uuid, pid, name, mem = (cell.strip() for cell in row)
        if not uuid.startswith("GPU-") or not pid.isdecimal():
            continue
        mib = int(mem) if mem.isdecimal() else -1
        short = name.rsplit("/", 1)[-1] or name
        label = f"{pid} {short}" + (f" ({mib} MiB)" if mib >= 0 else "")
        if uuid not in best or mib > best[uuid][0]:
            best[uuid] = (mib, label)
    return {uuid: label for uuid, (_, label) in best.items()}


@dataclass
class HostState:
    """What the monitor knows about one host right now."""

    name: str
    status: str = "connecting"  # connecting | live | stale
    error: str | None = None
    gpus: dict[int, GpuSample] = field(default_factory=dict)
    gpus_seen: int = 0  # GPUs in the last whole sample
    alerts: tuple[str, ...] = ()  # host-level alerts
    updated: float = 0.0  # monotonic time of the last line
    samples: int = 0  # whole samples received since start
    reconnects: int = 0
    retry_at: float | None = None  # monotonic time of the next connection attempt

    def copy(self) -> HostState:
        """A snapshot safe to read while the monitor runs."""
        return replace(self, gpus=dict(self.gpus))
