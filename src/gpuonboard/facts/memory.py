"""Pure parsers for host RAM: `free` output and /proc/meminfo."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MemoryInfo", "parse_free", "parse_meminfo"]


@dataclass(frozen=True)
class MemoryInfo:
    """Host RAM and swap sizes in bytes."""

    total_bytes: int | None
    available_bytes: int | None
    swap_total_bytes: int | None
    warnings: tuple[str, ...] = ()


_HUMAN = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTPE]?)(i?)B?$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def _amount(cell: str, unit_bytes: int) -> int | None:
    """Bytes from a free cell: a plain count of `unit_bytes`, or a `free -h` size like '1.9Gi'."""
    if cell.isdigit():
        return int(cell) * unit_bytes
    match = _HUMAN.match(cell)
    if not match:
        return None
    # free -h prints binary sizes ("Gi"); plain "G" from old procps also meant 1024-based.
    return round(float(match.group(1).replace(",", ".")) * 1024 ** _POWERS[match.group(2).upper()])


def parse_free(text: str, unit_bytes: int = 1024) -> MemoryInfo:
    """Parse `free` (KiB by default; pass unit_bytes=1 for `free -b`)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header_index = next((i for i, line in enumerate(lines) if "total" in line.split()), None)
    if header_index is None:
        return MemoryInfo(None, None, None, ("output not recognised as free (no header)",))
    columns = lines[header_index].split()
    rows = {}
    for line in lines[header_index + 1 :]:
        label, _, rest = line.partition(":")
        rows[label.strip()] = rest.split()
    warnings: list[str] = []

    def cell(row: str, column: str) -> int | None:
        """One numeric cell, warning when absent or unparseable."""
        values = rows.get(row)
        if values is None or column not in columns or columns.index(column) >= len(values):
            warnings.append(f"free: no {row} {column}")
            return None
        value = _amount(values[columns.index(column)], unit_bytes)
        if value is None:
            warnings.append(f"free: {row} {column} not a size: {values[columns.index(column)]!r}")
        return value

    total = cell("Mem", "total")
    # procps < 3.3.10 has no 'available' column; the figure is then simply unknown.
    available = cell("Mem", "available")
    swap = cell("Swap", "total")
    return MemoryInfo(total, available, swap, tuple(warnings))


# No server this tool meets has 64 TiB of RAM: a `free` total that would be more in KiB was `free -b`.
_KIB_IMPLAUSIBLE = 64 << 40
_BYTES_NAME = re.compile(r"free[-_ ]*-?b(?![a-z0-9])", re.I)


def is_bytes_output(name: str, text: str) -> bool:
    """Whether a saved `free` output holds bytes (`free -b`): named so (`free-b.txt`,
    `free -b.txt`), or its total read as KiB would be over 64 TiB."""
    if _BYTES_NAME.search(name):
        return True
    total = parse_free(text).total_bytes
    return total is not None and total > _KIB_IMPLAUSIBLE


def bytes_to_kib(text: str) -> str:
    """`free -b` output as `free -k` prints it (each number divided by 1024)."""
    return re.sub(r"(?m)(?<=\s)\d+(?=\s|$)", lambda m: str(int(m.group()) // 1024), text)


_MEMINFO = re.compile(r"^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+(kB))?\s*$")


def parse_meminfo(text: str) -> MemoryInfo:
    """Parse /proc/meminfo (values in kB, which the kernel means as KiB)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = _MEMINFO.match(line.strip())
        if match:
            values[match.group(1)] = int(match.group(2)) * (1024 if match.group(3) else 1)
    if not values:
        return MemoryInfo(None, None, None, ("output not recognised as /proc/meminfo",))
    warnings = [
        f"/proc/meminfo has no {key}"
        for key in ("MemTotal", "MemAvailable", "SwapTotal")
        if key not in values
    ]
    return MemoryInfo(
        values.get("MemTotal"), values.get("MemAvailable"), values.get("SwapTotal"), tuple(warnings)
    )
