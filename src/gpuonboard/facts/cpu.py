"""Pure parser for `lscpu` (plain text or `lscpu -J` JSON)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CpuInfo", "parse_cgroup_cpu_limit", "parse_lscpu"]


@dataclass(frozen=True)
class CpuInfo:
    """CPU shape of a host as lscpu reports it."""

    architecture: str | None
    model_name: str | None
    sockets: int | None
    cores_per_socket: int | None
    threads_per_core: int | None
    logical_cpus: int | None
    # sockets * cores_per_socket when both are known; clusters * cores per cluster where lscpu
    # says "Socket(s): -" (ARM without socket data)
    physical_cores: int | None
    warnings: tuple[str, ...] = ()
    # CPUs in lscpu's "Off-line CPU(s) list" (counted in logical_cpus, usable by nobody);
    # None when lscpu prints no such line (every CPU online)
    offline_cpus: int | None = None


_FIELD = re.compile(r"^\s*([^:]+?):\s*(.*?)\s*$")


def _plain_fields(text: str) -> dict[str, str]:
    """'Key: value' pairs of plain lscpu; first occurrence wins, wrapped Flags lines are skipped."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = _FIELD.match(line)
        if match:
            fields.setdefault(match.group(1).strip(), match.group(2))
    return fields


def _json_fields(entries: Iterable[Any]) -> dict[str, str]:
    """Flatten `lscpu -J` entries (newer util-linux nests them under "children")."""
    fields: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name = str(entry.get("field", "")).strip().rstrip(":").strip()
        data = entry.get("data")
        if name and data is not None:
            fields.setdefault(name, str(data).strip())
        children = entry.get("children")
        if isinstance(children, list):
            for key, value in _json_fields(children).items():
                fields.setdefault(key, value)
    return fields


def _int(fields: Mapping[str, str], key: str, warnings: list[str]) -> int | None:
    """Integer field, or None with a warning when missing or not a number (e.g. ARM's '-')."""
    value = fields.get(key)
    if value is None:
        warnings.append(f"lscpu has no '{key}' field")
        return None
    if not value.isdecimal():
        warnings.append(f"lscpu '{key}' is not a number: {value!r}")
        return None
    return int(value)


_CPU_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _cpu_list_count(value: str | None) -> int | None:
    """How many CPUs a lscpu CPU list names ('0-3,8,10-11' -> 7, '' -> 0); None if not a list."""
    if value is None:
        return None
    count = 0
    for part in value.replace(" ", "").split(","):
        if not part:
            continue
        match = _CPU_RANGE.match(part)
        if not match:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            return None
        count += last - first + 1
    return count


def _empty(message: str) -> CpuInfo:
    """A CpuInfo with nothing known and one warning saying why."""
    return CpuInfo(None, None, None, None, None, None, None, (message,))


def parse_lscpu(text: str) -> CpuInfo:
    """Parse `lscpu` or `lscpu -J` output into a CpuInfo."""
    stripped = text.strip()
    warnings: list[str] = []
    if stripped.startswith("{"):
        try:
            document = json.loads(stripped)
        except ValueError as exc:
            return _empty(f"lscpu JSON invalid: {exc}")
        entries = document.get("lscpu") if isinstance(document, Mapping) else None
        if not isinstance(entries, list):
            return _empty("lscpu JSON lacks the 'lscpu' list")
        fields = _json_fields(entries)
    else:
        fields = _plain_fields(text)
    if "Architecture" not in fields and "CPU(s)" not in fields:
        return _empty("output not recognised as lscpu")
    threads = _int(fields, "Thread(s) per core", warnings)
    logical = _int(fields, "CPU(s)", warnings)
    if fields.get("Socket(s)") == "-" and "Core(s) per cluster" in fields:
        # ARM without socket data from the firmware (Jetson Orin, Kunpeng 920, Ampere Altra on
        # some boards): lscpu prints "Socket(s): -" and counts cores per cluster instead
        sockets, cores = None, None
        clusters = _int(fields, "Cluster(s)", warnings)
        per_cluster = _int(fields, "Core(s) per cluster", warnings)
        physical = clusters * per_cluster if clusters is not None and per_cluster is not None else None
    else:
        sockets = _int(fields, "Socket(s)", warnings)
        cores = _int(fields, "Core(s) per socket", warnings)
        physical = sockets * cores if sockets is not None and cores is not None else None
    return CpuInfo(
        architecture=fields.get("Architecture") or None,
        model_name=fields.get("Model name") or None,
        sockets=sockets,
        cores_per_socket=cores,
        threads_per_core=threads,
        logical_cpus=logical,
        physical_cores=physical,
        warnings=tuple(warnings),
        offline_cpus=_cpu_list_count(fields.get("Off-line CPU(s) list")),
    )


def parse_cgroup_cpu_limit(text: str) -> float | None:
    """CPUs the cgroup quota allows (quota / period), the smallest among the probe's
    `FILE<TAB>VALUE` lines (v2 `cpu.max` "QUOTA PERIOD" or "max PERIOD"; v1
    `cpu.cfs_quota_us` -1 for none, with `cpu.cfs_period_us` in the same folder); None: no quota."""
    limits: list[float] = []
    v1: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        path, _, value = line.partition("\t")
        folder, _, file = path.rpartition("/")
        parts = value.split()
        if file == "cpu.max" and len(parts) == 2 and parts[0].isdecimal() and parts[1].isdecimal():
            if int(parts[1]) > 0:
                limits.append(int(parts[0]) / int(parts[1]))
        elif file in ("cpu.cfs_quota_us", "cpu.cfs_period_us") and re.fullmatch(r"-?\d+", value.strip()):
            v1.setdefault(folder.rstrip("/"), {})[file] = int(value.strip())
    for values in v1.values():
        quota, period = values.get("cpu.cfs_quota_us", -1), values.get("cpu.cfs_period_us", 0)
        if quota > 0 and period > 0:
            limits.append(quota / period)
    return min(limits) if limits else None
