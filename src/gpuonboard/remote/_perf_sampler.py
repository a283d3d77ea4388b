"""gpu_perf.py's nvidia-smi readers: the sampler (`--query-gpu=SAMPLE_FIELDS -lms`) and its rows
summarised per GPU and window, and the GPU pair links of `nvidia-smi topo -m`.

A part of gpu_perf.py (inlined into it when shipped: steps.prove.bundle): stdlib only, no
`__file__`."""

from __future__ import annotations

import contextlib
import re
import shutil
import statistics
import subprocess
import time
from typing import Any

from gpuonboard.remote._common import REASONS, reason_names
from gpuonboard.remote._common import start_sampler as start_smi

SAMPLE_MS = 500
SAMPLE_FIELDS = tuple(
    "timestamp,index,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit,"  # noqa: SIM905
    "pcie.link.gen.current,pcie.link.width.current,clocks_throttle_reasons.active,utilization.gpu,"
    "pci.bus_id".split(",")  # (the address: CUDA's device i need not be nvidia-smi's GPU i)
)
# other spellings of the same fields (newer drivers' names, a header's units stripped)
FIELD_ALIASES = {
    "clocks.current.sm": "clocks.sm",
    "clocks_event_reasons.active": "clocks_throttle_reasons.active",
}


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU_LABEL = re.compile(r"^GPU(\d+)$")


def parse_topology(text: str) -> dict[str, str] | None:
    """`nvidia-smi topo -m` -> {"0-1": "NV18", "0-2": "SYS", ...} for GPU pairs i < j (None: no
    GPU matrix in it). Tab separated or space aligned (a capture pasted from a terminal), ANSI
    escapes, NIC rows and legends allowed: the GPU columns come first and no GPU-to-GPU cell is
    empty, so a row's first whitespace-separated cells are its GPU links."""
    columns: list[int] | None = None
    rows: dict[int, list[str]] = {}
    for raw in text.splitlines():
        cells = _ANSI.sub("", raw).split()
        labels = [m.group(1) for m in map(_GPU_LABEL.match, cells) if m]
        if columns is None and labels and "X" not in cells:
            columns = [int(x) for x in labels]
            continue
        row = _GPU_LABEL.match(cells[0]) if cells and columns is not None else None
        if row and "X" in cells:
            rows[int(row.group(1))] = cells[1 : 1 + len(columns or [])]
    if columns is None or not rows:
        return None
    pairs: dict[str, str] = {}
    for i, cells in sorted(rows.items()):
        for j, cell in zip(columns, cells, strict=False):
            if i < j:
                pairs[f"{i}-{j}"] = cell
    return pairs


def topology() -> dict[str, str] | None:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        done = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    # 14: "infoROM is corrupted", a warning beside a whole answer (nvidia-smi(1), RETURN VALUE;
    # the package's facts/gpu_probes.WARNING_EXIT: this script runs on the host and imports
    # nothing of the package); any other non-zero code is a partial answer or none
    return parse_topology(done.stdout) if done.returncode in (0, 14) else None


def _number(text: str) -> float | None:
    """'1980', '627.40 W', '0x...04' (a hex mask) -> a number; '[N/A]', '' -> None."""
    text = text.strip()
    if text.lower().startswith("0x"):
        with contextlib.suppress(ValueError):
            return float(int(text, 16))
        return None
    match = re.match(r"[-+]?\d+(?:\.\d+)?", text)
    return float(match.group(0)) if match else None


def _timestamp(text: str) -> float | None:
    """nvidia-smi's '2026/07/03 22:11:09.763' (local time) -> epoch seconds."""
    try:
        whole, _, frac = text.strip().partition(".")
        return time.mktime(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) + float(f"0.{frac or 0}")
    except ValueError:
        return None


def parse_samples(text: str, fields: tuple[str, ...] = SAMPLE_FIELDS) -> list[dict[str, Any]]:
    """`nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] [-lms N]` -> one dict per row:
    field -> number (None when not a number; `timestamp` as epoch seconds, the reasons mask as an
    int), `index` an int. A header line, when there is one, names the fields (units stripped,
    newer names mapped to SAMPLE_FIELDS' through FIELD_ALIASES); else `fields` does."""
    out: list[dict[str, Any]] = []
    names = list(fields)
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if "index" in cells or "timestamp" in cells or any(c.startswith("clocks") for c in cells):
            names = [FIELD_ALIASES.get(c.split(" [")[0], c.split(" [")[0]) for c in cells]
            continue
        if len(cells) != len(names) or "index" not in names:
            continue
        row = dict(zip(names, cells, strict=True))
        if not row["index"].isdecimal():
            continue
        parsed: dict[str, Any] = {k: _number(v) for k, v in row.items() if k not in ("index", "timestamp")}
        parsed.update(index=int(row["index"]), **{"pci.bus_id": _bus(row.get("pci.bus_id"))})
        parsed["timestamp"] = _timestamp(row["timestamp"]) if "timestamp" in row else None
        out.append(parsed)
    return out


def decode_reasons(mask: float | None) -> list[str]:
    """The clock-event reasons bitmask -> names (bits past the table: 'bit N')."""
    return [] if mask is None else reason_names(int(mask))


def _bus(text: Any) -> str | None:
    """A PCI address as one key: '00000000:1B:00.0' and '0000:1b:00.0' -> '0:1b:00.0' (None: no
    address; gpuonboard.facts.gpu_ids.bus_key's rule, this script ships alone)."""
    parts = str(text or "").strip().lower().split(":")
    return f"{parts[0].lstrip('0') or '0'}:{parts[1]}:{parts[2]}" if len(parts) == 3 else None


def gpu_rows(rows: list[dict[str, Any]], index: int, bus_id: str | None = None) -> list[dict[str, Any]]:
    """One GPU's sampler rows: by PCI address where the GPU and the rows carry one (under
    CUDA_VISIBLE_DEVICES CUDA's device 0 may be nvidia-smi's GPU 2), else by index."""
    key = _bus(bus_id)
    if key and any(r.get("pci.bus_id") for r in rows):
        return [r for r in rows if r.get("pci.bus_id") == key]
    return [r for r in rows if r["index"] == index]


def pcie_seen(rows: list[dict[str, Any]], index: int, bus_id: str | None = None) -> dict[str, int] | None:
    """The highest PCIe generation and width the sampler saw on one GPU (None: never seen)."""
    mine = gpu_rows(rows, index, bus_id)
    gens, widths = _values(mine, "pcie.link.gen.current"), _values(mine, "pcie.link.width.current")
    return {"gen": int(max(gens)), "width": int(max(widths))} if gens and widths else None


def _values(rows: list[dict[str, Any]], field: str) -> list[float]:
    return [r[field] for r in rows if r.get(field) is not None]


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def summarize_window(
    rows: list[dict[str, Any]], index: int, start: float | None, end: float | None, bus_id: str | None = None
) -> dict[str, Any]:
    """One GPU's sampler rows between start and end (epoch s; None: every row, as for a capture
    without timestamps): SM clock medians over the first and last tenth of the rows, min and max;
    temperature max and median; power median and limit; samples each clock-event reason was
    active (every known reason listed, 0 included); how many samples read an SM clock and a
    reasons mask as a number (`[N/A]`, `[Not Supported]` cells are no reading)."""
    rows = [
        r
        for r in gpu_rows(rows, index, bus_id)
        if (start is None or r["timestamp"] is None or start <= r["timestamp"] <= (end or float("inf")))
    ]
    tenth = max(1, len(rows) // 10)
    clocks = _values(rows, "clocks.sm")
    reasons = dict.fromkeys(REASONS, 0)
    for r in rows:
        for name in decode_reasons(r.get("clocks_throttle_reasons.active")):
            reasons[name] = reasons.get(name, 0) + 1
    temps, limits = _values(rows, "temperature.gpu"), _values(rows, "power.limit")
    stamps = _values(rows, "timestamp")
    return {
        "samples": len(rows),
        "sm_clock_first_mhz": _median(_values(rows[:tenth], "clocks.sm")),
        "sm_clock_last_mhz": _median(_values(rows[-tenth:], "clocks.sm")),
        "sm_clock_min_mhz": min(clocks) if clocks else None,
        "sm_clock_max_mhz": max(_values(rows, "clocks.max.sm"), default=None),
        "temp_max_c": max(temps) if temps else None,
        "temp_median_c": _median(temps),
        "power_median_w": _median(_values(rows, "power.draw")),
        "power_limit_w": _median(limits),
        "reasons": reasons,
        # how much of the window the samples span (a sampler that died part-way saw only some)
        "sampled_s": max(stamps) - min(stamps) if stamps else None,
        "clock_samples": len(clocks),
        "reasons_samples": len(_values(rows, "clocks_throttle_reasons.active")),
    }


def start_sampler(log: str) -> subprocess.Popen[bytes] | None:
    """`nvidia-smi --query-gpu=SAMPLE_FIELDS -lms` into `log` (None: no nvidia-smi here)."""
    return start_smi(SAMPLE_FIELDS, SAMPLE_MS, log, subprocess.STDOUT)
