"""nvlink_links where `nvidia-smi topo -m` shows more GPUs than the nvlink listing names (a
listing of one GPU, `nvidia-smi nvlink --status -i 0`): topo -m's GPU count is evidence of the
box's GPUs, and the links of those not listed are not known, so the rule's pass is of the GPUs
read: unverified, naming the others (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import judged_box

REAL = Path(__file__).parents[3] / "fixtures" / "real"
NVLINK_I0 = "nvidia-smi-nvlink-status-i0__h100-80gb-hbm3__gpu0-only__nccl-note.txt"
TOPO_8 = "nvidia-smi-topo-m__8x-h100-nv18__space-aligned__nccl-note.txt"
ORDER = "gpu_model: H100 SXM\ngpu_count: 8\ninterconnect: nvlink\n"


def test_a_one_gpu_nvlink_listing_beside_an_eight_gpu_topo_is_unverified(tmp_path: Path) -> None:
    """A note's `nvidia-smi nvlink --status -i 0` (GPU 0's 18 links up, the command line above it left out)
    beside the same cluster's `topo -m` of 8 H100 joined by NV18, both verbatim. It passed "all
    links active on 1 GPU(s)"; GPUs 1-7 are not in the listing: unverified, naming them."""
    files = {"nvlink.txt": (REAL / NVLINK_I0).read_text(), "topo.txt": (REAL / TOPO_8).read_text()}
    _, checks = judged_box(tmp_path, files, ORDER)
    check = checks["nvlink_links"]
    assert check.verdict == "unverified", check.actual
    assert check.actual.endswith(
        "links not read for GPU 1, GPU 2, GPU 3, GPU 4, GPU 5, GPU 6, GPU 7 (not in the"
        " `nvidia-smi nvlink -s` output; topo -m shows 8 GPUs)"
    )
    assert check.actual.startswith("all links active on 1 GPU(s)")


def test_the_listing_alone_still_passes_what_it_shows(tmp_path: Path) -> None:
    """The same listing given alone: no output shows another GPU, the rule judges GPU 0 as
    before (its narrowing is said by gpu_count, not here)."""
    _, checks = judged_box(tmp_path, {"nvlink.txt": (REAL / NVLINK_I0).read_text()}, ORDER)
    assert checks["nvlink_links"].verdict == "pass"
