"""A `nvidia-smi topo -p2p` status matrix (cells OK / GNS / NS ...) saved beside a whole
`topo -m` in one folder: the p2p file is noted as not read (it says nothing of NVLink or PCIe
paths) and the folder's other files are judged; named alone it is still refused (exit 2).
Before, the p2p file refused the whole folder (finding m32e 9: noonghunna/club-3090#1229 posted
both matrices of one 2 x RTX 5090 box).

Real captures: tests/fixtures/real/SOURCES.md (the RTX 5090 p2p matrix, and a real 2-GPU
`topo -m`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
P2P = REAL / "nvidia-smi-topo-p2p-rw__geforce-rtx-5090__2gpu-gns.txt"


def _topo_m() -> Path:
    return next(p for p in sorted(REAL.glob("nvidia-smi-topo-m__*.txt")) if "cut" not in p.name)


def test_a_p2p_matrix_beside_a_topo_m_is_noted_and_the_folder_judged(tmp_path: Path) -> None:
    (tmp_path / "topo.txt").write_text(_topo_m().read_text())
    (tmp_path / "p2p.txt").write_text(P2P.read_text())
    notes: list[str] = []
    raw = offline.load_outputs([str(tmp_path)], notes)
    assert "nvidia_topo" in raw
    said = " ".join(notes)
    assert "p2p.txt: this GPU matrix's cells (GNS) are not links" in said
    assert "Not read: the other files given are judged." in said


def test_a_p2p_matrix_named_alone_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / "p2p.txt").write_text(P2P.read_text())
    with pytest.raises(UsageError):
        offline.load_outputs([str(tmp_path / "p2p.txt")])


def test_a_p2p_matrix_named_beside_a_topo_m_is_noted(tmp_path: Path) -> None:
    """The two files named (`invoke facts topo.txt,p2p.txt`): the same note, topo -m judged."""
    (tmp_path / "topo.txt").write_text(_topo_m().read_text())
    (tmp_path / "p2p.txt").write_text(P2P.read_text())
    notes: list[str] = []
    raw = offline.load_outputs([str(tmp_path / "topo.txt"), str(tmp_path / "p2p.txt")], notes)
    assert "nvidia_topo" in raw
    assert any("(GNS) are not links" in n for n in notes)
