"""A saved session that ends at a typed `nvidia-smi -L`'s GPU line without its `(UUID: ...)`
part (every driver since R260 prints it): the post was cut after the name, so the listing is
incomplete and gpu_count unverified, never "3 of the 4 ordered GPUs missing". collect_env's GPU
lines (-L's with the UUIDs taken out) stay whole.

Real capture: tests/fixtures/sessions/SOURCES.md (XuehaiPan/nvitop#8)."""

from __future__ import annotations

from pathlib import Path

from ..offline_judge import checks

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
NVITOP = SESSIONS / "transcript__mig-Processes+nvidia-smi-L-CUT-after-name__a100-nvitop-8.txt"
ORDER = "gpu_model: A100 80GB\ngpu_count: 4\n"


def test_the_session_ending_at_a_name_leaves_the_count_unverified(tmp_path: Path) -> None:
    rows = {c.name: c for c in checks(tmp_path, "session.txt", NVITOP.read_text(), ORDER)}
    assert rows["gpu_count"].verdict == "unverified", rows["gpu_count"].actual
    assert "missing" not in rows["gpu_count"].detail
    assert "1 x NVIDIA A100-SXM4-80GB" in rows["gpu_model"].actual


def test_a_whole_last_line_keeps_the_fail(tmp_path: Path) -> None:
    """The same session with the line's UUID put back (in memory): a whole 1-GPU listing, and 4
    ordered: the fail stands."""
    text = NVITOP.read_text().replace(
        "GPU 0: NVIDIA A100-SXM4-80GB",
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1c2d3e4f-0000-1111-2222-333344445555)",
    )
    rows = {c.name: c for c in checks(tmp_path, "session.txt", text, ORDER)}
    assert rows["gpu_count"].verdict == "fail"
