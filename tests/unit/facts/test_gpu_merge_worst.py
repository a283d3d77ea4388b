"""Fault evidence two formats of one box read otherwise, merged as the worst of them
(facts/gpu_merge.py `_worst_read`): a count's highest, every slowdown any format saw."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from .test_gpu_merge import SAME_BOX, _judged

# one H100 80GB HBM3 box in MIG mode (driver 590.48.01): -L, -q, the table and the CSV
BOX = SAME_BOX[3]
CSV = BOX[-1]


def _csv_edited(tmp_path: Path, cells: dict[str, str]) -> Path:
    """The box's real CSV with the named cells of its one GPU row set to `cells`."""
    rows = list(csv.reader(io.StringIO(CSV.read_text())))
    header = [h.strip() for h in rows[0]]
    for name, value in cells.items():
        rows[1][header.index(name)] = f" {value}"
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    (tmp_path / "edit").mkdir()
    edited = tmp_path / "edit" / CSV.name
    edited.write_text(text.getvalue())
    return edited


@pytest.mark.parametrize(
    ("cells", "rule", "verdict", "said"),
    [
        (
            {"ecc.errors.uncorrected.volatile.dram": "2", "ecc.errors.uncorrected.volatile.total": "2"},
            "ecc_uncorrectable",
            "fail",
            "GPU 0: 2 volatile",
        ),
        (
            {
                "clocks_event_reasons.hw_slowdown": "Active",
                "clocks_event_reasons.active": "0x0000000000000009",
            },
            "throttling",
            "fail",
            "GPU 0: hw_slowdown",
        ),
        ({"gpu_recovery_action": "Reset"}, "gpu_recovery", "fail", "GPU 0: Reset"),
    ],
    ids=["ecc-uncorrectable-2-in-csv", "hw-slowdown-in-csv", "recovery-reset-in-csv"],
)
def test_a_fault_the_csv_reads_beside_a_clean_q_is_judged(
    tmp_path: Path, cells: dict[str, str], rule: str, verdict: str, said: str
) -> None:
    """The real -q, table, -L and CSV of one H100 box, the CSV edited in-test: the named cells
    of its GPU row set (2 volatile uncorrectable DRAM ECC errors; a hardware slowdown, its bit
    0x8 added to the active mask; the driver's recovery action "Reset") while -q, read first,
    says 0, none and "None". Before: each field came from -q alone, so ecc_uncorrectable passed
    "0", throttling "none active" and gpu_recovery "None on GPU 0"."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, clean = _judged(tmp_path / "a", BOX)
    assert clean[rule].verdict == "pass"
    facts, got = _judged(tmp_path / "b", (*BOX[:-1], _csv_edited(tmp_path, cells)))
    assert got[rule].verdict == verdict, got[rule]
    assert said in got[rule].actual
    assert facts.gpu is not None
    if rule == "ecc_uncorrectable":
        assert ("ecc_volatile_uncorrectable", "csv") in facts.gpu.gpus[0].provenance


def test_equal_counts_keep_the_richest_format() -> None:
    """Where every format reads the same count, the field is the richest's, as before."""
    from gpuonboard.facts.gpu_merge import _worst_read
    from gpuonboard.facts.nvidia_smi import GpuInfo

    q = GpuInfo(index=0, name="H100", ecc_volatile_uncorrectable=0, pcie_replays=9)
    c = GpuInfo(index=0, name="H100", ecc_volatile_uncorrectable=0, pcie_replays=3)
    values = {"ecc_volatile_uncorrectable": 0, "pcie_replays": 9, "clock_event_reasons_known": False}
    provenance = [("ecc_volatile_uncorrectable", "text"), ("pcie_replays", "text")]
    _worst_read(values, provenance, [("text", q), ("csv", c)])
    assert values["ecc_volatile_uncorrectable"] == 0 and values["pcie_replays"] == 9
    assert provenance == [("ecc_volatile_uncorrectable", "text"), ("pcie_replays", "text")]
