"""`nvidia-smi -L` whose last GPU line has no `(UUID: ...)` part: every driver since R260 prints
it, so a last line that ends at the name was cut there (a post or session that ends
`GPU 0: NVIDIA A100-SXM4-80GB`), newline or not: the listing is not whole, and gpu_count is
unverified, never "3 of the 4 ordered GPUs missing".

Real capture: tests/fixtures/sessions/SOURCES.md (XuehaiPan/nvitop#8)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.gpu_list import parse_gpu_list

from ..offline_judge import checks

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
NVITOP = SESSIONS / "transcript__mig-Processes+nvidia-smi-L-CUT-after-name__a100-nvitop-8.txt"
ORDER = "gpu_model: A100 80GB\ngpu_count: 4\n"


def test_the_session_listing_cut_after_the_name_leaves_the_count_unverified(tmp_path: Path) -> None:
    rows = {c.name: c for c in checks(tmp_path, "session.txt", NVITOP.read_text(), ORDER)}
    assert rows["gpu_count"].verdict == "unverified", rows["gpu_count"].actual
    assert "missing" not in rows["gpu_count"].detail
    # (the name a newline ended is whole: read)
    assert rows["gpu_model"].actual.startswith("1 x NVIDIA A100-SXM4-80GB"), rows["gpu_model"].actual


def test_a_last_line_without_its_uuid_is_no_whole_listing() -> None:
    """The session's listing alone, with and without its final newline."""
    line = NVITOP.read_text().rstrip("\n").rsplit("\n", 1)[-1]
    assert line == "GPU 0: NVIDIA A100-SXM4-80GB"
    for text in (line, line + "\n"):
        listing = parse_gpu_list(text)
        assert not listing.complete
        assert [g.index for g in listing.gpus] == [0]


def test_whole_lines_before_a_whole_last_line_stay_whole() -> None:
    """A whole listing (every line with its UUID) is whole, as before."""
    text = (
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-8f1e2b3c-0000-1111-2222-333344445555)\n"
        "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-8f1e2b3c-0000-1111-2222-333344445556)\n"
    )
    assert parse_gpu_list(text).complete
