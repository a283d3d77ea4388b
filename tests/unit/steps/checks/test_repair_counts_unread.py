"""memory_repair on a one-GPU box whose output read the repair state (`Pending : No`) but printed
a count judged beside it as `N/A` or nothing: no peer GPU to compare with (gpu_health's
_unread_values), so the rule itself says the count was not read, never "nothing pending".

The captures are real (tests/fixtures/real); each test edits ONE count of one in memory, named
in the test, to the placeholder nvidia-smi prints for a value it did not read. Every real capture
that reads a repair state reads its counts (checked below), so the edit is the only gap."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any

from ...offline_judge import health_row

REAL = Path(__file__).parents[3] / "fixtures" / "real"
SHARED = Path(__file__).parents[4] / "shared" / "fixtures" / "real"
H200_Q = "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H200_Q_610 = "nvidia-smi-q__h200__1gpu__driver610.43.02.txt"
H200_X = "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
K20M_X = "nvidia-smi-q-x__tesla-k20m__1gpu__driver340.24__dtd-v6__icsw.xml"
VGPU_Q = "nvidia-smi-q__rtxa6000-24q-vgpu__1gpu__driver535.183.06__unlicensed__guest.txt"


def repair(text: str) -> tuple[str, str]:
    return health_row(text, "memory_repair")


def edited(name: str, pattern: str, value: str) -> str:
    """The real capture `name` with the ONE value `pattern` matches (its group 1) set to `value`."""
    text = (REAL / name).read_text()
    m = re.search(pattern, text)
    assert m is not None
    new = text[: m.start(1)] + value + text[m.end(1) :]
    assert (
        new.count("\n") == text.count("\n")
        and sum(a != b for a, b in zip(new.splitlines(), text.splitlines(), strict=True)) == 1
    )
    return new


TEXT_UNC = r"Remapped Rows\n(?:.*\n)*?\s+Uncorrectable Error\s+: (0)"
CASES = [
    # -q text: `Uncorrectable Error : N/A` (and `[N/A]`, and nothing) under `Pending : No`
    (H200_Q, TEXT_UNC, "N/A", "rows remapped after uncorrectable errors"),
    (H200_Q, TEXT_UNC, "[N/A]", "rows remapped after uncorrectable errors"),
    (H200_Q_610, TEXT_UNC, "N/A", "rows remapped after uncorrectable errors"),
    # -q -x: `<remapped_row_unc>N/A</remapped_row_unc>`, and an empty element
    (H200_X, r"<remapped_row_unc>(0)</remapped_row_unc>", "N/A", "rows remapped after uncorrectable errors"),
    (H200_X, r"<remapped_row_unc>(0)</remapped_row_unc>", "", "rows remapped after uncorrectable errors"),
    # page retirement (Kepler): a retired count N/A beside `<pending_retirement>No`
    (K20M_X, r"<multiple_single_bit_retirement>\s*<retired_count>(0)<", "N/A", "retired pages (single-bit)"),
    (K20M_X, r"<double_bit_retirement>\s*<retired_count>(0)<", "N/A", "retired pages (double-bit)"),
]


@pytest.mark.parametrize(("name", "pattern", "value", "what"), CASES)
def test_one_gpu_count_unread_beside_read_state_is_unverified(
    name: str, pattern: str, value: str, what: str
) -> None:
    assert repair((REAL / name).read_text()) == ("pass", "nothing pending")  # the capture as saved
    verdict, actual = repair(edited(name, pattern, value))
    assert verdict == "unverified", actual
    assert f"GPU 0: {what} not reported" in actual


def test_vgpu_guest_na_section_unchanged() -> None:
    # the real vGPU guest prints the whole section N/A by design: unverified as before, said so
    verdict, actual = repair((REAL / VGPU_Q).read_text())
    assert verdict == "unverified"
    assert actual.startswith("not reported for GPU 0 (nvidia-smi -q gave N/A")


def _captures() -> list[Path]:
    return sorted(p for d in (REAL, SHARED) if d.is_dir() for p in d.glob("nvidia-smi*"))


def test_every_real_capture_that_reads_a_state_reads_its_counts() -> None:
    # the premise of the rule: a real output never pairs a read state with an unread count
    seen = 0
    for path in _captures():
        for g in parse_any(path.read_text(errors="replace")).gpus:
            if g.remapped_rows_pending is not None and g.remapped_rows_failure is not None:
                seen += 1
                assert g.remapped_rows_uncorrectable is not None, path.name
            if g.retired_pages_pending is not None:
                seen += 1
                assert None not in (g.retired_pages_sbe, g.retired_pages_dbe), path.name
    assert seen >= 50


def test_a_count_unread_beside_a_warning_that_it_could_make_a_fail_is_unverified() -> None:
    """The real V100 `-q` (418.67) edited twice (retired pages: 59 double-bit, single-bit N/A):
    59 pages retired after double-bit errors is a warning, but with the single-bit count unread
    the total may be at NVIDIA's limit (a fail): unverified, the warning and the gap both said
    (it warned, the unread count hidden; review L of round 23)."""
    v100 = "nvidia-smi-q__tesla-v100-sxm2-32gb__1of4gpu__driver418.67.txt"
    text = (REAL / v100).read_text()
    text = re.sub(r"(Double Bit ECC\s+: )0", r"\g<1>59", text, count=1)
    text = re.sub(r"(Single Bit ECC\s+: )0(\n\s+Double Bit ECC\s+: 59)", r"\1N/A\2", text, count=1)
    verdict, actual = repair(text)
    assert verdict == "unverified", actual
    assert "59" in actual and "retired pages (single-bit) not reported" in actual, actual


def test_a_warning_read_stays_one_beside_a_count_that_adds_a_warning_at_most() -> None:
    """The real H200 `-q` edited twice (SRAM threshold exceeded: a warning; rows remapped after
    uncorrectable errors N/A, a count that can add a warning at most): the warning read is the
    verdict, the unread count said beside it (review M of round 23: it was made unverified, which
    ranks below a warning and hid it)."""
    text = edited(H200_Q, TEXT_UNC, "N/A")
    text, n = re.subn(r"(SRAM Threshold Exceeded\s+: )No", r"\1Yes", text, count=1)
    assert n == 1
    verdict, actual = repair(text)
    assert verdict == "warn", actual
    assert "rows remapped after uncorrectable errors not reported" in actual, actual


def test_a_gpu_whose_repair_state_is_unread_is_named_beside_anothers_warning() -> None:
    """The real 8 x H100 `-q` edited: GPU 0 with 2 rows remapped after uncorrectable errors (a
    warning), GPU 2's Remapped Rows block printed N/A (as `-q` prints it in MIG mode): the
    warning stands, and GPU 2 is named as not reported (it was left out of the row; review M of
    round 23)."""
    text = (REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt").read_text()
    blocks = text.split("\n    Remapped Rows\n")
    assert len(blocks) == 9
    values = r"(Correctable Error|Uncorrectable Error|Pending|Remapping Failure Occurred)(\s+): \S+"
    blocks[1] = re.sub(r"(Uncorrectable Error\s+: )0", r"\g<1>2", blocks[1], count=1)
    blocks[3] = re.sub(values, r"\1\2: N/A", blocks[3], count=4)
    verdict, actual = repair("\n    Remapped Rows\n".join(blocks))
    assert verdict == "warn", actual
    assert "GPU 0" in actual and "GPU 2: repair state not reported" in actual, actual
