"""Fault evidence two formats of one box read otherwise, merged as the worst of them
(facts/gpu_fields.py `_worst_read`): a count's highest, every slowdown any format saw."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from .test_gpu_merge import REAL, SAME_BOX, _judged, csv_edited

# one H100 80GB HBM3 box in MIG mode (driver 590.48.01): -L, -q, the table and the CSV
BOX = SAME_BOX[3]


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
        # NVML's bit 63, `unknown` ("some other unspecified factor is reducing the clocks")
        ({"clocks_event_reasons.active": "0x8000000000000000"}, "throttling", "warn", "GPU 0: unknown"),
    ],
    ids=[
        "ecc-uncorrectable-2-in-csv",
        "hw-slowdown-in-csv",
        "recovery-reset-in-csv",
        "unknown-reason-in-csv",
    ],
)
def test_a_fault_the_csv_reads_beside_a_clean_q_is_judged(
    tmp_path: Path, cells: dict[str, str], rule: str, verdict: str, said: str
) -> None:
    """The real -q, table, -L and CSV of one H100 box, the CSV edited in-test: the named cells
    of its GPU row set (2 volatile uncorrectable DRAM ECC errors; a hardware slowdown, its bit
    0x8 added to the active mask; the driver's recovery action "Reset"; the active mask set to
    bit 63 alone, NVML's unknown reason) while -q, read first, says 0, none and "None". Before:
    each field came from -q alone, so ecc_uncorrectable passed "0", throttling "none active"
    (the unknown reason too, round 25) and gpu_recovery "None on GPU 0"."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, clean = _judged(tmp_path / "a", BOX)
    assert clean[rule].verdict == "pass"
    facts, got = _judged(tmp_path / "b", csv_edited(tmp_path, BOX, cells))
    assert got[rule].verdict == verdict, got[rule]
    assert said in got[rule].actual
    assert facts.gpu is not None
    if rule == "ecc_uncorrectable":
        assert ("ecc_volatile_uncorrectable", "csv") in facts.gpu.gpus[0].provenance


def test_equal_counts_keep_the_richest_format() -> None:
    """Where every format reads the same count, the field is the richest's, as before."""
    from gpuonboard.facts.gpu_fields import _worst_read
    from gpuonboard.facts.nvidia_smi import GpuInfo

    q = GpuInfo(index=0, name="H100", ecc_volatile_uncorrectable=0, pcie_replays=9)
    c = GpuInfo(index=0, name="H100", ecc_volatile_uncorrectable=0, pcie_replays=3)
    values = {"ecc_volatile_uncorrectable": 0, "pcie_replays": 9, "clock_event_reasons_known": False}
    provenance = [("ecc_volatile_uncorrectable", "text"), ("pcie_replays", "text")]
    _worst_read(values, provenance, [("text", q), ("csv", c)])
    assert values["ecc_volatile_uncorrectable"] == 0 and values["pcie_replays"] == 9
    assert provenance == [("ecc_volatile_uncorrectable", "text"), ("pcie_replays", "text")]


Q2080 = REAL / "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt"
CSV2080 = REAL / "nvidia-smi-query-gpu__geforce-rtx-2080-super__1gpu__driver610.57.04__nvenc-load.csv"


def _edit(path: Path, tmp_path: Path, *subs: tuple[str, str]) -> Path:
    """`path` saved under its own name in `tmp_path` with each (pattern, replacement) of `subs`
    made once (re.subn, each must match exactly once)."""
    text = path.read_text()
    for pattern, new in subs:
        text, n = re.subn(pattern, new, text, count=1, flags=re.MULTILINE)
        assert n == 1, pattern
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / path.name
    out.write_text(text)
    return out


def test_a_link_at_gen1_under_load_in_one_format_is_no_power_saving_in_another(tmp_path: Path) -> None:
    """The real `-q` and `--query-gpu` CSV of one RTX 2080 Super box (Gen3 of Gen3 at x16, P2),
    edited in-test: the -q to an idle moment (`Performance State : P2` -> P8, Clocks Event Reasons
    `Idle : Not Active` -> Active, Utilization `GPU : 8 %` -> 0 %) with its link at Gen1 (PCIe
    Generation `Current` and `Device Current` 3 -> 1); the CSV, left at P2 and 8 %, with its link
    at Gen1 too (`pcie.link.gen.current` and `pcie.link.gen.gpucurrent` 3 -> 1). The -q alone is
    power saving (a pass); the CSV read the link at Gen1 while loaded: pcie_link fails, naming the
    CSV. Before, the link and the load came from -q alone: a pass, "idle, power saving"."""
    q = _edit(
        Q2080,
        tmp_path / "q",
        (r"(Performance State\s+: )P2$", r"\g<1>P8"),
        (r"(^\s+Idle\s+: )Not Active$", r"\g<1>Active"),
        (r"(^\s+GPU\s+: )8 %$", r"\g<1>0 %"),
        (r"(^\s+Current\s+: )3$", r"\g<1>1"),
        (r"(^\s+Device Current\s+: )3$", r"\g<1>1"),
    )
    rows = list(csv.reader(io.StringIO(CSV2080.read_text())))
    header = [h.strip() for h in rows[0]]
    for name in ("pcie.link.gen.current", "pcie.link.gen.gpucurrent"):
        assert rows[1][header.index(name)].strip() == "3"
        rows[1][header.index(name)] = " 1"
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / CSV2080.name).write_text(text.getvalue())
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, alone = _judged(tmp_path / "a", (q,))
    assert (alone["pcie_link"].verdict, alone["pcie_link"].actual) == (
        "pass",
        "at max width; idle, power saving: GPU 0 Gen1 of Gen3",
    )
    _, both = _judged(tmp_path / "b", (q, tmp_path / "c" / CSV2080.name))
    assert (both["pcie_link"].verdict, both["pcie_link"].actual) == (
        "fail",
        "GPU 0 Gen1 of Gen3 (in the CSV query)",
    )


def test_a_reason_one_format_read_is_read_on_the_gpu(tmp_path: Path) -> None:
    """The real -q, table, -L and CSV of one H100 box, -q's `SW Power Cap : Not Active` edited
    in-test to `N/A`: the CSV read that reason's state, so the merged GPU read it (the union of
    the formats' reads), never unread because -q, the richest format, printed no value (before,
    clock_event_reasons_read was -q's alone, without sw_power_cap)."""
    q = _edit(BOX[1], tmp_path / "q", (r"(SW Power Cap\s+: )Not Active$", r"\g<1>N/A"))
    (tmp_path / "b").mkdir()
    facts, got = _judged(tmp_path / "b", (BOX[0], q, *BOX[2:]))
    assert facts.gpu is not None
    (gpu,) = facts.gpu.gpus
    assert "sw_power_cap" in gpu.clock_event_reasons_read
    assert got["throttling"].verdict == "pass", got["throttling"]
