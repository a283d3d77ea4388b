"""`nvidia-smi nvlink --status` with a poster's `...<snip>...` line in each GPU's block
(measure36a 09, a RHEL AI KVM guest's 8 x H100 SXM5): the line is one left out by hand
(facts/elision), the links listed are read and the rule says how many were listed and names the
line. Before, the whole output was refused ("could not read what it printed") and no
nvlink_links verdict was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.elision import ELISION
from gpuonboard.facts.nvlink import parse_nvlink_status

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
SNIP = "nvidia-smi-nvlink-s__h100-80gb-hbm3__8gpu-snip-lines__rhel-ai-kvm-passthrough.txt"


@pytest.mark.parametrize(
    "line", ["...<snip>...", "   ...<snip>...", "...[snip]...", "--<snip>--", "... <snip> ..."]
)
def test_a_snip_between_marks_is_a_line_left_out_by_hand(line: str) -> None:
    assert ELISION.match(line)


def test_the_real_snipped_listing_reads_its_links_and_names_the_line(tmp_path: Path) -> None:
    status = parse_nvlink_status((REAL / SNIP).read_text())
    assert [g.index for g in status.gpus] == list(range(8))
    assert all([link.link for link in g.links] == [0, 1, 17] for g in status.gpus)
    assert status.elided == "...<snip>..."
    assert not status.warnings
    # (the box's `-L`: the listing's own GPU lines, as `nvidia-smi -L` prints them)
    text = (REAL / SNIP).read_text()
    listed = "".join(line + "\n" for line in text.splitlines() if line.startswith("GPU "))
    files = {"nvidia-smi-L.txt": listed, "nvlink.txt": text}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    rule = checks["nvlink_links"]
    assert rule.verdict == "unverified"
    assert "GPU 0 (3 of 18 links listed, all up; the others left out by hand: `...<snip>...`)" in rule.actual


# revQ Q3: `...<snip>...` as the LAST line of the listing (the GPUs after it left out) passed
# nvlink_links "all links active on 4 GPU(s)": the GPUs after it are not known, as where the
# listing is cut (cut_where), never a pass.
NVLINK_S = sorted(p.name for p in REAL.glob("nvidia-smi-nvlink-s__*.txt"))
A100_8 = "nvidia-smi-nvlink-s__a100-sxm4-80gb__8gpu.txt"


def _heads(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if line.lstrip().startswith("GPU ")]


@pytest.mark.parametrize("name", [n for n in NVLINK_S if len(_heads((REAL / n).read_text())) >= 2])
def test_every_real_listing_snipped_after_any_gpu_block_is_not_whole(name: str) -> None:
    lines = (REAL / name).read_text().splitlines()
    for k, head in enumerate(_heads((REAL / name).read_text())[1:], start=1):
        status = parse_nvlink_status("\n".join([*lines[:head], "...<snip>..."]) + "\n")
        assert not status.complete, k
        assert status.cut_where.startswith(f"the GPUs after GPU {status.gpus[-1].index} "), k
        assert "...<snip>..." in status.cut_where


def test_a_snip_ending_the_real_a100_listing_leaves_nvlink_links_unverified(tmp_path: Path) -> None:
    text = (REAL / A100_8).read_text()
    lines = text.splitlines()
    snipped = "\n".join([*lines[: _heads(text)[4]], "...<snip>..."]) + "\n"
    _, checks = judged_box(tmp_path, {"nvlink.txt": snipped}, "gpu_count: 8\n")
    rule = checks["nvlink_links"]
    assert rule.verdict == "unverified"
    assert "the GPUs after GPU 3" in rule.actual


def test_a_snip_inside_the_listing_still_reads_the_gpus_after_it() -> None:
    text = (REAL / A100_8).read_text()
    lines = text.splitlines()
    at = _heads(text)[4]
    status = parse_nvlink_status("\n".join([*lines[: at - 1], "...<snip>...", *lines[at:]]) + "\n")
    assert status.complete and status.cut_where == ""
