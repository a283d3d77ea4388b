"""Counts said and judged from what a saved output names whole (truth sweep round 34, measure34b):
a `topo -m` cut inside its rows names the GPUs of its header, its rows read said apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.topo import Topology, parse_topo

from ..offline_judge import details


def rows_read(t: Topology) -> list[str]:
    """The GPU rows a matrix read: its cells or its CPU affinity (as the interconnect row counts)."""
    return [g for g in t.gpus if g in t.cpu_affinity or any(a == g for a, _ in t.links)]


REAL = Path(__file__).parents[2] / "fixtures" / "real"
SGLANG_TOPO = "nvidia-smi-topo-m__8gpu-nv18-9nic__cut-in-gpu6-row__sglang-13973.txt"
# every real `topo -m` cut inside its GPU rows under its header row (the header names them all)
CUT_TOPOS = sorted(
    p.name
    for p in REAL.glob("nvidia-smi-topo-m*")
    if not (t := parse_topo(p.read_text(errors="replace"))).complete
    and t.gpu_columns
    and len(rows_read(t)) < len(t.gpu_columns)
)


def test_a_topo_m_cut_inside_its_rows_names_the_header_s_gpus(tmp_path: Path) -> None:
    """m34b 06 (sglang#13973, 8 GPUs in the header, cut inside GPU6's row), given alone: its GPU
    rules said "whose matrix names 7 GPU(s) (GPU0-GPU6)", untrue: the header names GPU0-GPU7
    (the interconnect row says "7 of its 8 GPU rows read")."""
    got = details(tmp_path, "topo.txt", (REAL / SGLANG_TOPO).read_text(), "gpu_count: 8\n")
    assert got["gpu_count"].startswith(
        "only `nvidia-smi topo -m` was given, whose matrix names 8 GPU(s) (GPU0-GPU7; 7 of their"
        " rows read) but not their model"
    ), got["gpu_count"]


@pytest.mark.parametrize("name", CUT_TOPOS)
def test_every_real_topo_cut_in_its_rows_names_its_header_s_gpus(tmp_path: Path, name: str) -> None:
    """The family: every real matrix cut inside its GPU rows, alone, names as many GPUs as its
    header does, never only the rows read."""
    matrix = parse_topo((REAL / name).read_text(errors="replace"))
    cols = matrix.gpu_columns
    got = details(tmp_path, "topo.txt", (REAL / name).read_text(errors="replace"), "gpu_count: 64\n")
    said = f"names {len(cols)} GPU(s) ({cols[0]}-{cols[-1]}; {len(rows_read(matrix))} of their rows read)"
    assert said in got["gpu_count"], got["gpu_count"]


def test_the_family_is_found() -> None:
    assert SGLANG_TOPO in CUT_TOPOS and len(CUT_TOPOS) >= 3, CUT_TOPOS
