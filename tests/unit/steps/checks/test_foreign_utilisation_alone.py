"""foreign_processes where a GPU's only sign of work is its utilisation: no memory held and no
process listed. Any job, in whatever container or VM, holds GPU memory; an idle Kepler board
(Tesla K80) with persistence mode off reads 100 % at 0 MiB. Never "another job is using the
GPUs", never a pass either: unverified, with the reason.

Real capture: tests/fixtures/sessions/SOURCES.md (openmm#2386); the edits are in memory."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

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
