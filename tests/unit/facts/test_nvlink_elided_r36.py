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
