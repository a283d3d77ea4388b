"""Two real shapes of `nvidia-smi nvlink -s` that were refused as "not a recognised command
output" (round 33, measure33a 11 and 35): a paste cut inside the next GPU's header before its
index (`GP`, bottlerocket#4418), read as a listing cut short there; and link lines a web page
printed flush left (`Link 0: 26.562 GB/s`, Lambda's docs), read as the listing they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.facts.nvlink import parse_nvlink_errors, parse_nvlink_status

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CUT_GP = REAL / (
    "nvidia-smi-nvlink-s__h100-80gb-hbm3__2gpu-18links__cut-in-gpu2-header__bottlerocket-4418.txt"
)
FLUSH = REAL / "nvidia-smi-nvlink-s__h100-80gb-hbm3__3of8gpu__flush-left__elided__lambda-docs.txt"
ORDER = "gpu_model: H100 SXM\ngpu_count: 8\n"


def test_a_listing_cut_inside_the_next_header_is_read_as_cut_short(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "nvlink-s.txt", CUT_GP.read_text(), ORDER)
    why = "the `nvidia-smi nvlink -s` listing is not whole: it ends inside the next GPU's header (`GP`)"
    assert got["gpu_model"] == ("unverified", f"2 x NVIDIA H100 80GB HBM3; incomplete probe: {why}")
    assert got["gpu_count"] == ("unverified", f"2 listed; incomplete probe: {why}")
    assert got["nvlink_links"] == (
        "unverified",
        "links not readable for the GPU after GPU 1 (listing cut short in its header `GP`)",
    )


@pytest.mark.parametrize("tail", ["G", "GP", "GPU", "GPU ", "GPU 2", "GP\n"])
def test_every_start_of_a_header_ends_the_listing_cut(tail: str) -> None:
    """The family: the paste's last line any start of `GPU N: ...` before its colon, with or
    without a final newline; the links read stay read, nothing is a warning."""
    text = CUT_GP.read_text().rsplit("\n", 1)[0] + "\n" + tail
    assert detect_kind(text) == "nvidia_nvlink"
    status = parse_nvlink_status(text)
    assert [g.active_links for g in status.gpus] == [18, 18]
    assert not status.complete and status.cut_gpu is None and not status.warnings
    assert status.cut_where.startswith("the GPU after GPU 1 (listing cut short")
    errors = parse_nvlink_errors("GPU 0: NVIDIA H100 (UUID: GPU-1)\n\t Link 0: Replay Errors: 0\n" + tail)
    assert not errors.complete and not errors.warnings


def test_a_header_start_inside_the_listing_is_no_cut() -> None:
    """Only the last line: a stray `GP` between blocks is a line not read, as before."""
    status = parse_nvlink_status(
        "GPU 0: NVIDIA H100 (UUID: GPU-1)\n Link 0: 25 GB/s\nGP\nGPU 1: X (UUID: GPU-2)\n"
    )
    assert status.cut_header == "" and status.warnings


def test_flush_left_link_lines_are_a_listing(tmp_path: Path) -> None:
    """Lambda's docs: GPU 0, GPU 1 (3 links), `...`, GPU 7, every link line at the margin: read
    as the same text indented is (the GPUs left out named)."""
    text = FLUSH.read_text()
    assert detect_kind(text) == "nvidia_nvlink"
    indented = "\n".join(
        ("         " + line if line.startswith("Link") else line) for line in text.split("\n")
    )
    flush, spaced = (verdicts(tmp_path, "nvlink-s.txt", t, ORDER) for t in (text, indented))
    assert flush == spaced
    assert flush["gpu_count"][0] == "unverified" and "GPU 2, 3, 4, 5, 6" in flush["gpu_count"][1]
    assert "GPU 1 (3 of 18 links listed, all up" in flush["nvlink_links"][1]


def test_a_flush_left_line_without_a_speed_is_no_link_listing() -> None:
    """A GPU line then prose beginning `Link 0:` is not taken for a listing."""
    assert detect_kind("GPU 0: NVIDIA H100 (UUID: GPU-1)\nLink 0: see the manual\n") != "nvidia_nvlink"
