"""Parsing and printing of sizes (`80GB`, `80 GiB`, `81920MiB`, `1.5T`), of the one timestamp
form every file we write uses (RFC 3339, UTC), and the finite-number test of figures read
from JSON."""

from __future__ import annotations

import math
import re
import time

# Decimal suffixes are SI (GB = 10**9 bytes) as vendors sell disks and order sheets;
# binary suffixes (GiB) are IEC. Bare numbers are bytes.
_MULTIPLIERS: dict[str, int] = {
    "": 1,
    "B": 1,
    "K": 1000,
    "KB": 1000,
    "M": 1000**2,
    "MB": 1000**2,
    "G": 1000**3,
    "GB": 1000**3,
    "T": 1000**4,
    "TB": 1000**4,
    "P": 1000**5,
    "PB": 1000**5,
    "KIB": 1024,
    "MIB": 1024**2,
    "GIB": 1024**3,
    "TIB": 1024**4,
    "PIB": 1024**5,
}

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(value: object) -> int:
    """Return a size in bytes from `80GB`, `80 GiB`, `81920MiB`, an int, or raise ValueError."""
    return _parse(value, _MULTIPLIERS)


# RAM is sold in binary sizes: an order's `512GB` is 512 GiB, `1TB` 1 TiB, `0.5TB` 512 GiB.
_RAM_MULTIPLIERS: dict[str, int] = {
    **_MULTIPLIERS,
    **{si: _MULTIPLIERS[f"{si[0]}IB"] for si in ("K", "KB", "M", "MB", "G", "GB", "T", "TB", "P", "PB")},
}


def parse_ram_size(value: object) -> int:
    """Bytes of a RAM order: decimal units are read as binary, as RAM is sold (`512GB` = 512 GiB,
    `1TB` = 1 TiB, `0.5TB` = 512 GiB, `1.5TB` = 1536 GiB); `GiB`/`TiB` and bare bytes as written."""
    return _parse(value, _RAM_MULTIPLIERS)


def _parse(value: object, multipliers: dict[str, int]) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value!r} is negative; a size must be zero or more")
        return value
    if isinstance(value, float):
        raise ValueError(f"{value!r} has no unit; write e.g. 80GB or 80GiB")
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a size")
    match = _SIZE_RE.match(value)
    if not match and _SIZE_RE.match(value.strip().removeprefix("-")):
        raise ValueError(f"{value!r} is negative; a size must be zero or more")
    if not match:
        raise ValueError(f"{value!r} is not a size like 80GB, 80 GiB or 81920MiB")
    number, suffix = match.groups()
    multiplier = multipliers.get(suffix.upper())
    if multiplier is None:
        raise ValueError(f"{value!r} has an unknown unit {suffix!r}; use B, MB, GB, TB, MiB, GiB or TiB")
    return int(float(number) * multiplier)


def format_bytes(n: int | None, binary: bool = True, decimals: int = 1) -> str:
    """Human-readable size: `80.0 GiB` (binary) or `85.9 GB` (decimal)."""
    if n is None:
        return "unknown"
    base = 1024 if binary else 1000
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] if binary else ["B", "KB", "MB", "GB", "TB", "PB"]
    value = float(n)
    for unit in units:
        if abs(value) < base or unit == units[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.{decimals}f} {unit}"
        value /= base
    return f"{n} B"  # pragma: no cover


def parse_duration(value: object) -> float:
    """Return seconds from `30s`, `5m`, `2h`, `1.5h` or a number of seconds."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"{value!r} is negative")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a duration")
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", value)
    if not match:
        raise ValueError(f"{value!r} is not a duration like 30s, 5m or 2h")
    number, unit = match.groups()
    factor = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}[unit]
    return float(number) * factor


def ram_order_bytes(ordered: int) -> int:
    """The RAM of an order read from a `summary.json` written before RAM orders were parsed in
    binary (`parse_ram_size`): there `1TB` was stored as 10^12 bytes and is 1 TiB, `512GB`
    512 GiB. A size not whole in SI units (what the inventory stores now: `1TB` as 2^40
    bytes, `0.5TB` as 2^39) is kept. The acceptance rule judges the order's own bytes."""
    for si, binary in ((10**12, 1 << 40), (10**9, 1 << 30), (10**6, 1 << 20)):
        if ordered >= si and ordered % (si // 1000 if si > 10**6 else si) == 0:
            amount = ordered / si
            if si == 10**12 and (amount * 1024) % 64 and ordered % 10**9 == 0:
                continue  # 1.6TB is 1600 GB -> 1600 GiB, not 1.6 TiB
            return round(amount * binary)
    return ordered


def rfc3339(epoch: float | None = None) -> str:
    """`epoch` (default: now) as RFC 3339 in UTC, `2026-12-02T07:11:57Z`: the form `jq
    fromdateiso8601`, Python's datetime.fromisoformat and xs:dateTime all read (a local
    `+0800` offset without its colon is not RFC 3339, and jq rejects any offset)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if epoch is None else epoch))


def finite_number(value: object) -> float | None:
    """A figure read from JSON as a float, or None: absent, null, a bool, text, NaN or infinite
    (a hand-edited summary's `"n/a"`, a result's NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)
