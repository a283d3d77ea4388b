"""lscpu parser against every real capture, plain and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.facts.cpu import CpuInfo, parse_lscpu

FIXTURES = Path(__file__).parents[1] / "fixtures"

EPYC = "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt"
GRACE = "lscpu__gh200-grace-neoverse-v2__aarch64.txt"

CASES = [
    (EPYC, CpuInfo("x86_64", "AMD EPYC 9374F 32-Core Processor", 2, 32, 1, 64, 64)),
    (GRACE, CpuInfo("aarch64", "Neoverse-V2", 1, 72, 1, 72, 72)),
]


@pytest.mark.parametrize(("name", "expected"), CASES)
def test_every_capture(name: str, expected: CpuInfo) -> None:
    assert parse_lscpu((FIXTURES / "real" / name).read_text()) == expected


def test_every_real_lscpu_is_covered() -> None:
    assert {p.name for p in (FIXTURES / "real").glob("lscpu*")} == {n for n, _ in CASES}


def _as_json(text: str, nested: bool) -> str:
    """Re-express a plain capture the way `lscpu -J` prints it (flat or util-linux 2.38 nested)."""
    entries: list[dict[str, Any]] = []
    for line in text.splitlines():
        if ":" in line and not line.startswith(" " * 20):
            key, _, value = line.partition(":")
            entries.append({"field": key.strip() + ":", "data": value.strip()})
    if nested:
        entries = [{"field": "Architecture:", "data": entries[0]["data"], "children": entries[1:]}]
    return json.dumps({"lscpu": entries})


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize(("name", "expected"), CASES)
def test_json_form(name: str, expected: CpuInfo, nested: bool) -> None:
    text = _as_json((FIXTURES / "real" / name).read_text(), nested)
    assert parse_lscpu(text) == expected


def test_non_numeric_socket_count_warns() -> None:
    info = parse_lscpu("Architecture: aarch64\nCPU(s): 8\nSocket(s): -\nCore(s) per cluster: 4\n")
    assert info.logical_cpus == 8
    assert info.sockets is None and info.physical_cores is None
    assert info.warnings


@pytest.mark.parametrize(
    "text", ["", "garbage\n", "{not json", '{"lscpu": 3}', "[]", "lscpu: command not found\n"]
)
def test_garbage_warns_without_crash(text: str) -> None:
    info = parse_lscpu(text)
    assert info.logical_cpus is None and info.physical_cores is None
    assert info.warnings
