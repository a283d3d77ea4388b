"""`nvidia-smi topo -mp` (`--matrix_pci`): the matrix of `topo -m` with each GPU pair's PCIe path
where `-m` prints NV#, and a legend without the NV# line. Saved and judged offline, it is no
evidence of a PCIe-only box: two real captures of 4 x A100 nodes on NVLink (JUWELS Booster,
Levante) read SYS between every GPU pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.narrowed import narrowed
from gpuonboard.facts.topo import interconnect, parse_topo, weakest_link

from ..offline_judge import checks, verdicts

FIXTURES = Path(__file__).parents[2] / "fixtures"
JUWELS = "real/nvidia-smi-topo-mp__a100__4gpu-4nic__juwels-booster.txt"
LEVANTE = "real/nvidia-smi-topo-mp__a100__4gpu-2nic__levante.txt"
NO_LEGEND = "derived/nvidia-smi-topo-mp__a100__4gpu-4nic__juwels-booster__no-legend__derived.txt"
# a PCIe box's `topo -m` (its legend has NV#): still read as PCIe
PCIE_M = "derived/nvidia-smi-topo-m__a100__4gpu-pcie__derived.txt"
NVLINK_ORDER = "gpu_count: 4\ninterconnect: nvlink\n"
# the command lines the sources show above the matrices (see real/SOURCES.md)
COMMAND = {
    JUWELS: "kornblueh1@jwlogin22% srun -N1 -n1 nvidia-smi topo -mp\n",
    LEVANTE: "nvidia-smi topo -mp\n",
    NO_LEGEND: "kornblueh1@jwlogin22% srun -N1 -n1 nvidia-smi topo -mp\n",
}


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("name", [JUWELS, LEVANTE])
def test_the_legend_without_nv_names_a_pcie_only_matrix(name: str) -> None:
    matrix = parse_topo(read(name))
    assert matrix.gpus == ("GPU0", "GPU1", "GPU2", "GPU3") and matrix.complete
    assert weakest_link(matrix) == "SYS"
    assert "no NV# (NVLink) line" in matrix.pcie_only
    assert interconnect(matrix) == "unknown"  # (was "pcie": a claim the matrix cannot make)


def test_a_topo_m_legend_keeps_pcie() -> None:
    matrix = parse_topo(read(PCIE_M))
    assert matrix.pcie_only == "" and interconnect(matrix) == "pcie"


@pytest.mark.parametrize(
    ("name", "command"), [(JUWELS, ""), (LEVANTE, ""), (JUWELS, COMMAND[JUWELS]), (LEVANTE, COMMAND[LEVANTE])]
)
def test_an_nvlink_order_is_unverified_not_failed(tmp_path: Path, name: str, command: str) -> None:
    text = command + read(name)
    verdict, actual = verdicts(tmp_path, "topo.txt", text, NVLINK_ORDER)["interconnect"]
    assert verdict == "unverified"  # (was fail: "NVLink was ordered, but ... only over PCIe")
    assert actual.startswith("unknown: ") and "PCIe paths only" in actual and "SYS" in actual
    (check,) = [c for c in checks(tmp_path, "topo.txt", text, NVLINK_ORDER) if c.name == "interconnect"]
    assert "save `nvidia-smi topo -m`" in check.detail


def test_the_copied_command_names_it_without_a_legend(tmp_path: Path) -> None:
    text = COMMAND[NO_LEGEND] + read(NO_LEGEND)
    verdict, actual = verdicts(tmp_path, "topo.txt", text, NVLINK_ORDER)["interconnect"]
    assert verdict == "unverified" and "`nvidia-smi topo -mp` shows the PCIe paths only" in actual
    # without its command line and legend the matrix is no different from a PCIe box's topo -m
    assert verdicts(tmp_path, "topo.txt", read(NO_LEGEND), NVLINK_ORDER)["interconnect"][0] == "fail"


def test_a_pcie_order_passes(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "topo.txt", read(LEVANTE), "interconnect: pcie\n")["interconnect"]
    assert verdict == "pass" and actual.startswith("pcie: ")


@pytest.mark.parametrize(
    "command",
    ["nvidia-smi topo -mp", "srun -N1 -n1 nvidia-smi topo -mp", "nvidia-smi topo --matrix_pci | grep GPU"],
)
def test_narrowed_names_topo_mp(command: str) -> None:
    assert narrowed("nvidia_topo", command).endswith("shows the PCIe paths only, never NVLink")


@pytest.mark.parametrize("command", ["nvidia-smi topo -m", "nvidia-smi topo --matrix", ""])
def test_narrowed_leaves_topo_m(command: str) -> None:
    assert narrowed("nvidia_topo", command) == ""


P2P = "real/nvidia-smi-topo-p2p-rw__geforce-rtx-5090__2gpu-gns.txt"


def test_a_p2p_status_matrix_is_refused_not_judged(tmp_path: Path) -> None:
    """`nvidia-smi topo -p2p rw` prints a GPU matrix in the layout of `topo -m` with peer-to-peer
    status cells (2 x RTX 5090: GNS, "GPU not supported"): read as links it failed an NVLink order
    ("only over PCIe (the weakest pair through GNS)") and passed a PCIe one."""
    from gpuonboard.errors import UsageError
    from gpuonboard.facts.topo import foreign_links

    assert foreign_links(parse_topo(read(P2P))) == ["GNS"]
    for order in (NVLINK_ORDER, "interconnect: pcie\n"):
        with pytest.raises(UsageError, match=r"p2p-rw__.*\(GNS\) are no link of `nvidia-smi topo -m`.*save"):
            verdicts(tmp_path, Path(P2P).name, read(P2P), order)


@pytest.mark.parametrize("name", [JUWELS, LEVANTE, PCIE_M, "real/nvidia-smi-topo-m__h200__8gpu-10nic.txt"])
def test_link_matrices_have_no_foreign_cell(name: str) -> None:
    from gpuonboard.facts.topo import foreign_links

    assert foreign_links(parse_topo(read(name))) == []
