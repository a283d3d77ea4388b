"""foreign_processes where a GPU's only sign of work is its utilisation: no memory held and no
process listed. Any job, in whatever container or VM, holds GPU memory; an idle Kepler board
(Tesla K80) with persistence mode off reads 100 % at 0 MiB. Never "another job is using the
GPUs", never a pass either: unverified, with the reason.

Real capture: tests/fixtures/sessions/SOURCES.md (openmm#2386); the edits are in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.base import Check

from ...offline_judge import checks, judged_box

SESSIONS = Path(__file__).parents[3] / "fixtures" / "sessions"
K80 = (
    SESSIONS
    / "transcript__lspci+nvidia-smi-410.104-K80-100pct-0MiB-No-running-processes-CUT__openmm-2386.txt"
)


def foreign(tmp_path: Path, text: str) -> tuple[str, str, str]:
    row = next(c for c in checks(tmp_path, "session.txt", text) if c.name == "foreign_processes")
    return row.verdict, row.actual, row.detail


def test_k80_at_100_pct_with_0_mib_is_no_other_job(tmp_path: Path) -> None:
    """The real K80 table: 100 % utilisation, 0 MiB used, `No running processes found`,
    persistence Off: unverified naming the figures (the old fail said another job)."""
    verdict, actual, detail = foreign(tmp_path, K80.read_text())
    assert verdict == "unverified"
    assert actual == (
        "GPU 0 at 100 % utilisation with 0 MiB used (persistence mode Disabled), no process listed"
    )
    assert "another job is using" not in detail
    assert "Kepler" in detail


def test_k80_with_memory_held_still_fails(tmp_path: Path) -> None:
    """The same table with 2 GiB used (edited in memory): memory held beside the work is a job's
    allocations: the fail stands."""
    text = K80.read_text().replace("|      0MiB / 11441MiB |", "|   2048MiB / 11441MiB |")
    verdict, _actual, detail = foreign(tmp_path, text)
    assert verdict == "fail"
    assert "another job is using" in detail


def test_k80_with_a_small_context_still_fails(tmp_path: Path) -> None:
    """300 MiB used at 100 % (a CUDA context's size, edited in memory): a small job, not the
    idle reading: the fail stands."""
    text = K80.read_text().replace("|      0MiB / 11441MiB |", "|    300MiB / 11441MiB |")
    verdict, _actual, _detail = foreign(tmp_path, text)
    assert verdict == "fail"


def test_k80_idle_passes(tmp_path: Path) -> None:
    """0 % at 0 MiB with the list read empty: a pass, as before."""
    text = K80.read_text().replace("|    100%      Default |", "|      0%      Default |")
    verdict, _actual, _detail = foreign(tmp_path, text)
    assert verdict == "pass"


REAL = Path(__file__).parents[3] / "fixtures" / "real"
L40S_TABLE = REAL / "nvidia-smi__l40s__1gpu__driver595.80__idle-section-100pct-0mib-242w-no-process.txt"
L40S_CSV = (
    REAL
    / "nvidia-smi-query-gpu__l40s__1gpu__driver595.80__idle-section-100pct-0mib-145w-gpu-idle-not-active.csv"
)


def _l40s(tmp_path: Path, csv: str | None) -> Check:
    files = {"nvidia-smi.txt": L40S_TABLE.read_text()}
    if csv is not None:
        files["query-gpu.csv"] = csv
    _facts, by_rule = judged_box(tmp_path, files, "gpu_count: 1\n")
    return by_rule["foreign_processes"]


def test_an_l40s_at_100_pct_with_0_mib_drawing_power_at_max_clock_warns(tmp_path: Path) -> None:
    """measure34a 28: the real L40S table (100 %, 0 MiB, no process) beside its CSV of the same
    second (144.97 W of 350 W, SM 2520 MHz of 2520, gpu_idle Not Active): a warn naming the
    draw, the clock and the idle reason. Before: unverified as the idle Kepler reading."""
    row = _l40s(tmp_path, L40S_CSV.read_text())
    assert row.verdict == "warn", (row.verdict, row.actual)
    assert "144.97 W of its 350 W limit" in row.actual
    assert "SM clock 2520 MHz of 2520 MHz" in row.actual
    assert "GPU-idle clock reason not active" in row.actual


def test_the_l40s_table_alone_reads_no_clock_and_stays_unverified(tmp_path: Path) -> None:
    """The same real table without its CSV: no clock nor idle reason read: the unverified of
    utilisation with no memory held stands (its draw alone is no evidence: the K80's 84 W)."""
    row = _l40s(tmp_path, None)
    assert row.verdict == "unverified", (row.verdict, row.actual)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("144.97 W", "35.00 W"),
        ("2520 MHz, 2520 MHz", "210 MHz, 210 MHz"),
        ("0x0000000000000000, Not Active", "0x0000000000000001, Active"),
    ],
)
def test_the_l40s_csv_at_an_idle_draw_clock_or_reason_stays_unverified(
    tmp_path: Path, field: str, value: str
) -> None:
    """The real CSV edited in memory to an idle GPU's draw (35 W), clock (210 MHz) or gpu_idle
    reason (Active, with the other reasons): the evidence of work is gone, unverified as before."""
    row = _l40s(tmp_path, L40S_CSV.read_text().replace(field, value, 1))
    assert row.verdict == "unverified", (row.verdict, row.actual)
