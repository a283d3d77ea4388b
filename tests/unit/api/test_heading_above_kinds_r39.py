"""A poster's heading or sentence line above an output whose detection reads the text's top
(`numactl -H`'s `available:` line, df's and lsblk's headers, ibdev2netdev's lines, podman info's
`host:`): read as no part of it, said in a note, one rule for every kind (api/heading_above.py
below_heading). measure39d 20, memtest86plus#346: `**2x AMD Opteron™ Processor 6272:**` above a
whole `numactl -H` made it "not a recognised command output", where the same heading above an
lscpu was read."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
OPTERON = "numactl-H__2x-opteron-6272-4node-127.98gib__markdown-heading-above__memtest86plus-346.txt"


def _kinds(tmp_path: Path, name: str, text: str) -> tuple[list[str], list[str]]:
    """(the kinds read from `text` saved as `name`, the load's notes)."""
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    notes: list[str] = []
    return sorted(offline.load_outputs([str(folder / name)], notes=notes)), notes


def test_the_numactl_below_its_heading_is_read(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "numa.txt", (REAL / OPTERON).read_text(), "ram: 128GB\ncpu_cores: 32\n")
    assert got["ram"][0] == "pass" and got["ram"][1].startswith("127.98 GiB")
    assert got["cpu_cores"][0] == "unverified"
    kinds, notes = _kinds(tmp_path, "numa.txt", (REAL / OPTERON).read_text())
    assert kinds == ["numactl"]
    assert any("`2x AMD Opteron™ Processor 6272:`" in note and "heading" in note for note in notes)


# real outputs whose kind is detected from the text's top, and lines posters write above them
OUTPUTS = [
    "numactl-H__1node-2cpu-16gib__diamond-724.txt",
    "numactl-H__2x-epyc-9375f__2node-1.5tb__proxmox-cpu-affinity-58.txt",
    "df-P-B1__h200-vm.txt",
    "df-PT__long-device-name-mapper__jc-generic.txt",
    "lsblk-Afi__fstype-fsver-label-uuid-fsavail-mountpoints__mmcblk__libreelec-10834.txt",
    "ibdev2netdev-v__4x-cx6-vpi-hdr__all-active__search-25374003452.txt",
]
HEADINGS = [
    "**2x AMD Opteron(TM) Processor 6272:**\n",
    "Here is my numactl output:\n\n",
    "## c7a.metal-48xl\n",
]


@pytest.mark.parametrize("heading", HEADINGS)
@pytest.mark.parametrize("name", OUTPUTS)
def test_a_real_output_below_a_heading_reads_as_itself(tmp_path: Path, name: str, heading: str) -> None:
    text = (REAL / name).read_text()
    alone, _ = _kinds(tmp_path, name, text)
    headed, notes = _kinds(tmp_path, name, heading + text)
    assert alone and headed == alone
    assert any("(a heading a script or a page printed)" in note for note in notes)


def test_an_output_detected_with_its_heading_keeps_it(tmp_path: Path) -> None:
    """A heading above an lscpu, whose lines are read wherever they stand, changes nothing: no
    note of a heading dropped (the rule drops lines only where the kind is not detected with them)."""
    name = next(p.name for p in sorted(REAL.glob("lscpu__*.txt")))
    _, notes = _kinds(tmp_path, name, "Here is my lscpu output:\n" + (REAL / name).read_text())
    assert not any("(a heading a script or a page printed)" in note for note in notes)
