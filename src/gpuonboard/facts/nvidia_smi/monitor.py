"""`nvidia-smi dmon` and `nvidia-smi pmon` samples a user saved: a `# gpu ...` header (`#Date
Time gpu ...` with `-o DT`), a `# Idx ...` units line, then one row per GPU (dmon) or per
process (pmon) per interval. Neither names a GPU's model, its memory or the driver, so neither
is read as a GPU listing (a dmon row of numbers is no CSV row, a pmon row no table row);
`monitor_refusal` names which it is and what it shows, for the offline reader's refusal."""

from __future__ import annotations

import re

# the two header lines nvidia-smi prints above each page of samples (R340 to R580: `# gpu   pwr
# temp ...` / `# Idx  W  C ...`; `# gpu  pid  type  sm ... command` / `# Idx  #  C/G ... name`;
# with `-o DT` the date and time columns first: `#Date  Time  gpu ...` / `#YYYYMMDD HH:MM:SS Idx`)
_HEADER = re.compile(
    r"^[ \t]*#(?P<columns>[^\n]*\bgpu\b[^\n]*)\n[ \t]*#[^\n]*\bIdx\b", re.IGNORECASE | re.MULTILINE
)
# what dmon's columns measure (nvidia-smi(1), dmon `-s`: p, u, c, v, m, e, t)
_MEASURES = {
    "pwr": "power",
    "gtemp": "temperature",
    "temp": "temperature",
    "mtemp": "memory temperature",
    "sm": "utilisation",
    "mem": "utilisation",
    "enc": "utilisation",
    "dec": "utilisation",
    "jpg": "utilisation",
    "ofa": "utilisation",
    "mclk": "clocks",
    "pclk": "clocks",
    "pviol": "throttling",
    "tviol": "throttling",
    "fb": "memory use",
    "bar1": "memory use",
    "ccpm": "memory use",
    "sbecc": "ECC errors",
    "dbecc": "ECC errors",
    "pci": "PCIe",
    "rxpci": "PCIe",
    "txpci": "PCIe",
}


def _columns(text: str) -> list[str] | None:
    """The sample's column names, lower case ('date', 'time', 'gpu', 'pwr', ...), None for a text
    with no such header."""
    match = _HEADER.search(text[:4000])
    return None if match is None else match.group("columns").lower().split()


def _rows(text: str, columns: list[str]) -> list[dict[str, str]]:
    """The sample rows (not the `#` header lines) by column, each with its GPU index."""
    rows = []
    for line in text.splitlines():
        cells = line.split()
        if line.lstrip().startswith("#") or len(cells) < len(columns) - 1:
            continue
        row = dict(zip(columns, cells, strict=False))
        if row.get("gpu", "").isdigit():
            rows.append(row)
    return rows


def monitor_kind(text: str) -> str | None:
    """'dmon' or 'pmon' for a saved `nvidia-smi dmon` / `pmon` sample, None for other text."""
    columns = _columns(text)
    if columns is None:
        return None
    if "pid" in columns:
        return "pmon"
    return "dmon" if set(_MEASURES) & set(columns) else None


def _busy(rows: list[dict[str, str]]) -> str:
    """What a pmon sample's rows say of each GPU: '1 process on GPU 0; none on GPU 1' (a row of
    `-` is a GPU with no process in that interval)."""
    pids: dict[int, set[str]] = {}
    for row in rows:
        pid = row.get("pid", "")
        pids.setdefault(int(row["gpu"]), set()).update([pid] if pid.isdigit() else [])
    busy = [f"{len(p)} process{'es' if len(p) > 1 else ''} on GPU {g}" for g, p in sorted(pids.items()) if p]
    idle = [str(g) for g, p in sorted(pids.items()) if not p]
    said = busy + ([f"none on GPU {', '.join(idle)}"] if idle else [])
    return "; ".join(said) or "no process row"


def monitor_refusal(text: str) -> str | None:
    """The sentence refusing a saved `nvidia-smi dmon` / `pmon` sample, naming the GPUs (and,
    for pmon, the processes) its rows show; None for other text."""
    kind = monitor_kind(text)
    columns = _columns(text) or []
    if kind is None:
        return None
    rows = _rows(text, columns)
    if kind == "pmon":
        shown = _busy(rows)
    else:
        measures = ", ".join(dict.fromkeys(_MEASURES[c] for c in columns if c in _MEASURES))
        gpus = sorted({int(row["gpu"]) for row in rows})
        shown = f"{measures} of GPU {', '.join(map(str, gpus)) or '(no row)'} per interval"
    return (
        f"an `nvidia-smi {kind}` sample ({shown}), which names no GPU model, memory or driver, so no"
        " GPU can be judged from it: save `nvidia-smi -q` (or the plain `nvidia-smi`) of the box."
    )
