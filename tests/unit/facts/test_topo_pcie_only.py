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
TWO_ROWS = "derived/nvidia-smi-topo-mp__a100__4gpu-4nic__juwels-booster__2-gpu-rows__derived.txt"
# a real `topo -m` of a driver from before NVLink: its legend's own wording, no NV# line
KEPLER = "real/nvidia-smi-topo-m__kepler__4gpu-soc-phb__path-traverses-legend__ompi-users-2015.txt"
LEGEND_CUT = "derived/nvidia-smi-topo-m__a100__4gpu-pcie__legend-cut-before-nv__derived.txt"
# a PCIe box's `topo -m` (its legend has NV#): still read as PCIe
PCIE_M = "derived/nvidia-smi-topo-m__a100__4gpu-pcie__derived.txt"
NVLINK_ORDER = "gpu_count: 4\ninterconnect: nvlink\n"
# the command lines the sources show above the matrices (see real/SOURCES.md)
COMMAND = {
    JUWELS: "kornblueh1@jwlogin22% srun -N1 -n1 nvidia-smi topo -mp\n",
    LEVANTE: "nvidia-smi topo -mp\n",
    NO_LEGEND: "kornblueh1@jwlogin22% srun -N1 -n1 nvidia-smi topo -mp\n",
    TWO_ROWS: "$ nvidia-smi topo -mp\n",
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


@pytest.mark.parametrize("name", [PCIE_M, KEPLER])
def test_a_topo_m_legend_keeps_pcie(name: str) -> None:
    matrix = parse_topo(read(name))
    assert matrix.pcie_only == "" and interconnect(matrix) == "pcie"


def test_a_pre_nvlink_topo_m_fails_an_nvlink_order(tmp_path: Path) -> None:
    """A real `topo -m` of 2015 (4 Kepler GPUs, Open MPI users list): its driver's legend says
    "SOC = Path traverses a socket-level link" and has no NV# line because no GPU had NVLink. It
    was read as a `topo -mp` (unverified, "save `nvidia-smi topo -m`", which it is)."""
    assert parse_topo(read(KEPLER)).complete
    verdict, actual = verdicts(tmp_path, "topo.txt", read(KEPLER), NVLINK_ORDER)["interconnect"]
    assert (verdict, actual) == ("fail", "pcie (weakest GPU link SOC)")
    assert verdicts(tmp_path, "topo.txt", read(KEPLER), "interconnect: pcie\n")["interconnect"] == (
        "pass",
        "pcie (weakest GPU link SOC)",
    )


@pytest.mark.parametrize("name", [JUWELS, LEVANTE, LEGEND_CUT])
def test_a_legend_without_nv_is_never_called_a_topo_mp(tmp_path: Path, name: str) -> None:
    """A modern legend without its NV# line is a `topo -mp`'s, or one cut short (a PCIe box's
    `topo -m` pasted without its last line): unknown for NVLink, and the file is not said to be a
    `-mp` without its copied command."""
    verdict, actual = verdicts(tmp_path, "topo.txt", read(name), NVLINK_ORDER)["interconnect"]
    assert verdict == "unverified"
    assert "its legend has no NV# (NVLink) line: cut short, or `nvidia-smi topo -mp`" in actual
    assert "as that of" not in actual  # (it said: "... line, as that of `nvidia-smi topo -mp`")


@pytest.mark.parametrize(
    ("name", "command"), [(JUWELS, ""), (LEVANTE, ""), (JUWELS, COMMAND[JUWELS]), (LEVANTE, COMMAND[LEVANTE])]
)
def test_an_nvlink_order_is_unverified_not_failed(tmp_path: Path, name: str, command: str) -> None:
    text = command + read(name)
    verdict, actual = verdicts(tmp_path, "topo.txt", text, NVLINK_ORDER)["interconnect"]
    assert verdict == "unverified"  # (was fail: "NVLink was ordered, but ... only over PCIe")
    assert actual.startswith("unknown: ") and "PCIe paths only" in actual and "SYS" in actual
    (check,) = [c for c in checks(tmp_path, "topo.txt", text, NVLINK_ORDER) if c.name == "interconnect"]
    assert "`nvidia-smi topo -m` (without -p)" in check.detail


def test_the_copied_command_names_it_without_a_legend(tmp_path: Path) -> None:
    text = COMMAND[NO_LEGEND] + read(NO_LEGEND)
    verdict, actual = verdicts(tmp_path, "topo.txt", text, NVLINK_ORDER)["interconnect"]
    # (the command named as copied, its launcher too: api/command_line.py)
    assert (
        verdict == "unverified" and "`srun -N1 -n1 nvidia-smi topo -mp` shows the PCIe paths only" in actual
    )
    # without its command line and legend the matrix cannot be told from a PCIe box's topo -m
    # nor from a `-mp`: unknown for NVLink (round 30: it failed "pcie", go-gpuallocator#17)
    assert verdicts(tmp_path, "topo.txt", read(NO_LEGEND), NVLINK_ORDER)["interconnect"][0] == "unverified"


def test_a_pcie_order_passes(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "topo.txt", read(LEVANTE), "interconnect: pcie\n")["interconnect"]
    assert verdict == "pass" and actual.startswith("pcie: ")


@pytest.mark.parametrize("order", ["interconnect: pcie\n", NVLINK_ORDER])
@pytest.mark.parametrize("command", [COMMAND[TWO_ROWS], ""])
def test_a_topo_mp_cut_short_is_unverified(tmp_path: Path, order: str, command: str) -> None:
    """The JUWELS `topo -mp` cut after the rows of GPU0 and GPU1 (its header names GPU0-GPU3):
    the paths of GPU2 and GPU3 are unknown, so a PCIe order is not met (it passed as "pcie: ...
    shows the PCIe paths only"); with no command line nor legend it is a matrix cut short too.
    Its copied `-mp` is named (m31c 4: it was called a topo -m matrix cut short, to rerun)."""
    verdict, actual = verdicts(tmp_path, "topo.txt", command + read(TWO_ROWS), order)["interconnect"]
    said = (
        "unknown: `nvidia-smi topo -mp` shows the PCIe paths only, never NVLink, and is cut"
        " short (2 GPU rows read)"
        if command
        else "unknown: the nvidia-smi topo -m matrix is cut after GPU1's row (2 of its 4 GPU rows read)"
    )
    assert (verdict, actual) == ("unverified", said)


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
        with pytest.raises(UsageError) as refused:
            verdicts(tmp_path, Path(P2P).name, read(P2P), order)
        said = str(refused.value)
        assert "p2p-rw__" in said and "(GNS) are not links that `nvidia-smi topo -m` prints" in said
        assert "`nvidia-smi topo -p2p`'s peer-to-peer status" in said and "save `nvidia-smi topo -m`" in said


# every `-m` (and `-mp`) matrix among the real and derived captures and the saved sessions: none
# may be refused as another view (exit 2)
LINK_MATRICES = sorted(
    path
    for folder in ("real", "derived", "sessions")
    for path in (FIXTURES / folder).glob("*topo*")
    # (nvidia-smi's refusal of a `topo -m` command line, Windows' nvidia-smi that has no topo, is
    # no matrix: its own test, api/test_saved_forms_refusals.py; nor is a paste's rows without
    # the matrix's header, `part-of-...`: api/test_saved_fragments.py)
    if path.suffix == ".txt"
    and "-p2p" not in path.name
    and "usage-error" not in path.name
    and not path.name.startswith(("part-of-", "lsblk-"))  # (lsblk --topology: no topo -m)
)


def test_the_link_matrices_are_every_topo_m_capture() -> None:
    names = {p.name for p in LINK_MATRICES}
    assert {Path(n).name for n in (JUWELS, LEVANTE, PCIE_M, KEPLER, TWO_ROWS, LEGEND_CUT)} <= names
    assert sum(n.startswith("nvidia-smi-topo-m__") for n in names) >= 17 and len(names) >= 23


@pytest.mark.parametrize("path", LINK_MATRICES, ids=lambda p: p.name)
def test_link_matrices_have_no_foreign_cell(tmp_path: Path, path: Path) -> None:
    from gpuonboard.facts.topo import foreign_links

    assert parse_topo(path.read_text()).gpus and foreign_links(parse_topo(path.read_text())) == []
    if path.parent.name != "sessions":  # (a transcript of several commands is judged in its own tests)
        assert "interconnect" in verdicts(tmp_path, path.name, path.read_text(), NVLINK_ORDER)


def test_the_copied_topo_mp_is_carried_as_a_flag_not_a_sentence() -> None:
    """The offline reader marks a copied `topo -mp` on its ProbeOutput (`pcie_paths_only`);
    parse_facts reads that flag, not the wording of `partial` (it matched the sentence's end, so
    rewording it would have judged a `-mp` as a PCIe box again)."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput

    text = read(NO_LEGEND)  # (a matrix that only its command line names a `-mp`)
    flagged = ProbeOutput(text, "", 0, "`nvidia-smi topo -mp`: reworded", pcie_paths_only=True)
    topology = parse_facts({"nvidia_topo": flagged}).topology
    assert topology is not None and topology.pcie_only == "`nvidia-smi topo -mp`: reworded"
    assert interconnect(topology) == "unknown"
    # (a PCIe box's `topo -m` with its legend, NV# line and all: the sentence's words are no flag)
    said = ProbeOutput(read(PCIE_M), "", 0, "a sentence that shows the PCIe paths only, never NVLink")
    topology = parse_facts({"nvidia_topo": said}).topology
    assert topology is not None and interconnect(topology) == "pcie"


@pytest.mark.parametrize(
    ("command", "pci"),
    [
        ("srun -N1 nvidia-smi topo -mp", True),
        ("nvidia-smi topo --matrix_pci | grep GPU", True),
        ("nvidia-smi topo -m", False),
    ],
)
def test_offline_sets_the_flag_from_the_command(command: str, pci: bool) -> None:
    from gpuonboard.api.narrowed import matrix_pci

    assert matrix_pci("nvidia_topo", command) is pci and not matrix_pci("df", command)


GPUALLOC = "real/nvidia-smi-topo-m__rtx4090__8gpu-2nic-all-sys__no-legend__go-gpuallocator-17.txt"


def test_a_matrix_saved_without_any_legend_is_unknown_for_nvlink(tmp_path: Path) -> None:
    """Round 30 (gpualloc17): NVIDIA/go-gpuallocator#17's 8 x RTX 4090 matrix, tab separated, SYS
    between every GPU pair, pasted without its legend and without a command line: `-mp` prints
    the same cells on an NVLink box, so an NVLink order is unverified, never failed "pcie"; a PCIe
    order passes (every pair has the PCIe path shown)."""
    text = read(GPUALLOC)
    assert "Legend" not in text and "NV#" not in text
    t = parse_topo(text)
    assert len(t.gpus) == 8 and t.complete and interconnect(t) == "unknown"
    assert t.pcie_only.startswith(
        "no legend (NV# line) was saved with it: cut short, or `nvidia-smi topo -mp`"
    )
    order = "gpu_count: 8\ninterconnect: nvlink\n"
    verdict, actual = verdicts(tmp_path, "topo.txt", text, order)["interconnect"]
    assert verdict == "unverified" and actual.startswith("unknown: no legend (NV# line) was saved"), actual
    pcie = verdicts(tmp_path, "topo.txt", text, "gpu_count: 8\ninterconnect: pcie\n")["interconnect"]
    assert pcie[0] == "pass", pcie
    # the same matrix with a GPU pair NV4 (edited in-test) shows NVLink whatever its legend: mixed
    nv = text.replace("GPU0\t X \tSYS", "GPU0\t X \tNV4", 1).replace("GPU1\tSYS", "GPU1\tNV4", 1)
    assert interconnect(parse_topo(nv)) == "mixed"


WRX90 = "real/nvidia-smi-topo-m__rtx-6000-ada__2gpu-2nic-phb__driver575.51.03__threadripper-wrx90.txt"
WRX90_COMMAND = "$ sonata@dev-canyon1:~/stelline$ nvidia-smi topo -m\n"  # (its source's, SOURCES.md)


@pytest.mark.parametrize("cut", ["Legend:"])
def test_a_whole_topo_m_matrix_its_legend_cut_fails_an_nvlink_order(tmp_path: Path, cut: str) -> None:
    """Round 31 (fresh16): a whole `nvidia-smi topo -m` matrix of PCIe paths, its command copied
    above it, saved without its legend or with the legend cut before its NV# line (rtx6kpro's
    2 x RTX PRO 6000 notes, `$ sudo nvidia-smi topo -m` and the matrix alone) was unknown for an
    NVLink order, "cut short, or `nvidia-smi topo -mp`": the command says `-m`, which prints NV#
    wherever NVLink joins two GPUs, so a legend cut away takes nothing from the matrix above it
    (as a cut matrix's whole rows already failed). Without the command it stays unknown."""
    text = read(WRX90)
    legend_cut = text[: text.index(cut)]
    assert "NV#" not in legend_cut and parse_topo(legend_cut).complete
    order = "gpu_count: 2\ninterconnect: nvlink\n"
    verdict, actual = verdicts(tmp_path, "topo.txt", WRX90_COMMAND + legend_cut, order)["interconnect"]
    assert (verdict, actual) == ("fail", "pcie (weakest GPU link PHB)")
    assert verdicts(tmp_path, "topo.txt", legend_cut, order)["interconnect"][0] == "unverified"
    # a `-mp` command above the same matrix stays what it was: PCIe paths only, unknown
    mp = WRX90_COMMAND.replace("topo -m", "topo -mp") + legend_cut
    assert verdicts(tmp_path, "topo.txt", mp, order)["interconnect"][0] == "unverified"
    pcie = verdicts(tmp_path, "topo.txt", WRX90_COMMAND + legend_cut, "interconnect: pcie\n")
    assert pcie["interconnect"][0] == "pass"


@pytest.mark.parametrize("name", [JUWELS, LEVANTE])
def test_a_real_topo_mp_under_a_copied_topo_m_stays_unknown(tmp_path: Path, name: str) -> None:
    """Review revB F2: a real `nvidia-smi topo -mp` (its whole legend through PIX, no NV#) under
    a copied `$ nvidia-smi topo -m` (a wrong command line pasted above it) failed an NVLink
    order ("pcie (weakest GPU link SYS)"). The command's `-m` is trusted only where no legend was
    saved (cut away after the matrix): a legend present that ends before NV# is a `-mp`'s or one
    cut short, unknown for NVLink, as docs/guides/offline.md says."""
    text = "$ nvidia-smi topo -m\n" + read(name)
    assert verdicts(tmp_path, "topo.txt", text, NVLINK_ORDER)["interconnect"][0] == "unverified"


def test_a_topo_m_legend_cut_before_nv_stays_unknown(tmp_path: Path) -> None:
    """The WRX90 `topo -m` with its command, its legend cut before the PIX line (X through PXB
    saved): a legend present without NV# stays unknown for NVLink (it failed an NVLink order)."""
    text = read(WRX90)
    legend_cut = text[: text.index("  PIX  = Connection")]
    order = "gpu_count: 2\ninterconnect: nvlink\n"
    got = verdicts(tmp_path, "topo.txt", WRX90_COMMAND + legend_cut, order)["interconnect"]
    assert got[0] == "unverified", got
