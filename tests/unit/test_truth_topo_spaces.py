"""`nvidia-smi topo -m` read by alignment: a capture with its tabs expanded (pasted from a
terminal or a document) gives the same Topology as the tab-separated original."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.topo import Topology, interconnect, parse_topo

REAL = Path(__file__).parents[1] / "fixtures" / "real"
TAB_FIXTURES = sorted(p for p in REAL.glob("nvidia-smi-topo-m__*") if "\t" in p.read_text())
SPACED = REAL / "nvidia-smi-topo-m__h100-80gb-hbm3__4gpu-8nic__driver560.35.05__space-aligned.txt"


def _facts(t: Topology) -> tuple[object, ...]:
    return (
        t.gpus,
        dict(t.links),
        t.nics,
        dict(t.cpu_affinity),
        dict(t.numa_affinity),
        t.warnings,
        dict(t.nic_legend),
    )


@pytest.mark.parametrize("path", TAB_FIXTURES, ids=lambda p: p.name)
def test_tabs_expanded_parse_identically(path: Path) -> None:
    text = path.read_text()
    assert "\t" not in text.expandtabs()
    assert parse_topo(text).gpus  # the original reads
    assert _facts(parse_topo(text.expandtabs())) == _facts(parse_topo(text))


def test_tab_fixtures_include_the_ansi_one() -> None:
    assert any("ansi-escapes" in p.name for p in TAB_FIXTURES) and len(TAB_FIXTURES) >= 4


def test_real_space_aligned_capture() -> None:
    text = SPACED.read_text()
    assert "\t" not in text
    topo = parse_topo(text)
    assert topo.warnings == ()
    assert topo.gpus == ("GPU0", "GPU1", "GPU2", "GPU3")
    assert topo.nics == tuple(f"NIC{i}" for i in range(8))
    assert interconnect(topo) == "nvlink" and topo.links[("GPU3", "GPU0")] == "NV18"
    assert topo.cpu_affinity == {f"GPU{i}": "0-79" for i in range(4)}
    assert topo.numa_affinity == {f"GPU{i}": "0" for i in range(4)}
    assert topo.nic_legend["NIC7"] == "mlx5_7"


def test_empty_cpu_affinity_cell_keeps_numa_in_its_column() -> None:
    """An empty CPU Affinity cell (real shape: an H200 node whose first 4 GPUs print none)
    read from the tab form and from its expanded form: NUMA stays NUMA."""
    text = (
        "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV18\tPIX\t\t0\t\tN/A\n"
        "GPU1\tNV18\t X \tNODE\t56\t1\t\tN/A\n"
        "NIC0\tPIX\tNODE\t X \n"
    )
    for form in (text, text.expandtabs()):
        topo = parse_topo(form)
        assert topo.cpu_affinity == {"GPU1": "56"}, form
        assert topo.numa_affinity == {"GPU0": "0", "GPU1": "1"}, form
