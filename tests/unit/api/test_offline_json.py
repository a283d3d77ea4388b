"""`facts --json` (api/offline.facts_json) of a GPU several nvidia-smi formats read: each format's
reading written once, only where the formats differ, on real captures."""

from __future__ import annotations

import json
from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# one real H200 box (driver 580.159.04) in four formats: -q -x, -q, the CSV query and the table
H200_BOX = tuple(
    REAL / name
    for name in (
        "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml",
        "nvidia-smi-q__h200__1gpu__driver580.159.04.txt",
        "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv",
        "nvidia-smi__h200__1gpu__driver580.159.04.txt",
    )
)


def _doc(tmp_path: Path) -> dict[str, object]:
    for f in H200_BOX:
        (tmp_path / f.name).write_bytes(f.read_bytes())
    facts = parse_facts(offline.load_outputs([str(tmp_path)]))
    return offline.facts_json(facts)


def test_each_formats_reading_is_written_where_the_formats_differ(tmp_path: Path) -> None:
    """The four formats of the real H200 box: `readings` holds one entry per format with only the
    fields they read otherwise (the table's rounded 35 C beside -q's 34 C), never a format's whole
    reading with its nulls. Before: every format's whole reading (~100 fields each, nulls too)."""
    gpu = _doc(tmp_path)["gpu"]
    assert isinstance(gpu, dict)
    readings = gpu["gpus"][0]["readings"]
    assert [r["format"] for r in readings] == ["xml", "text", "csv", "table"]
    assert [r.get("temperature_c") for r in readings] == [34, 34, None, 35]
    assert all(None not in r.values() for r in readings)
    assert "name" not in readings[0] and "memory_total_mib" not in readings[0]


def test_the_merged_report_is_written_once(tmp_path: Path) -> None:
    """`gpu_evidence` says what each format did; its report is `gpu`, not written again. Before:
    the whole merged report twice (37.5 KB for this 1-GPU box; now under 12 KB)."""
    doc = _doc(tmp_path)
    evidence = doc["gpu_evidence"]
    assert isinstance(evidence, dict)
    assert evidence["answered"] == ["xml", "text", "csv", "table"] and "report" not in evidence
    assert len(json.dumps(doc, indent=1, ensure_ascii=False)) < 12_000
