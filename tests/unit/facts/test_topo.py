"""nvidia-smi topo -m parser against every real capture and the derived PCIe matrix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.facts.topo import Topology, all_pairs_nvlink, interconnect, parse_topo, weakest_link

FIXTURES = Path(__file__).parents[2] / "fixtures"

# file, gpus, nics, interconnect, weakest, all_pairs_nvlink
CASES = [
    ("real/nvidia-smi-topo-m__h100-80gb-hbm3__1gpu__driver590.48.01__ansi-escapes.txt",
     1, (), "single", None, None),
    # our own capture: rented 1 x H200 VM, 2026-11-29 (header in the same ANSI escapes)
    ("real/nvidia-smi-topo-m__h200__1gpu__driver580.159.04.txt",
     1, (), "single", None, None),
    ("real/nvidia-smi-topo-m__h200__8gpu-10nic.txt",
     8, tuple(f"NIC{i}" for i in range(10)), "nvlink", "NV18", True),
    # space aligned (pasted with tabs expanded): small-ablation's benchmark notes
    ("real/nvidia-smi-topo-m__h100-80gb-hbm3__4gpu-8nic__driver560.35.05__space-aligned.txt",
     4, tuple(f"NIC{i}" for i in range(8)), "nvlink", "NV18", True),
    ("real/nvidia-smi-topo-m__v100-sxm2-32gb__4gpu-4nic__power9-traverse.txt",
     4, tuple(f"mlx5_{i}" for i in range(4)), "mixed", "SYS", False),
    # DGX A100 (gengwg/cheatsheets): NV12 mesh, 12 NICs under their mlx5 names
    ("real/nvidia-smi-topo-m__a100__8gpu-12nic__dgx-a100.txt",
     8, tuple(f"mlx5_{i}" for i in range(12)), "nvlink", "NV12", True),
    # a Dell HGX B300 whose whole matrix (command line, legend) names 7 of its 8 GPUs (m34c 32b)
    ("real/nvidia-smi-topo-m__b300-hgx__7-of-8-gpus__legend__dell-xe9780.txt",
     7, (), "nvlink", "NV18", True),
    # 4 x RTX 6000 Ada over PCIe on two sockets (luigifcruz/stelline), space aligned
    ("real/nvidia-smi-topo-m__rtx-6000-ada__4gpu-4nic__driver575.51.03__space-aligned.txt",
     4, tuple(f"NIC{i}" for i in range(4)), "pcie", "SYS", False),
    # round 15: a Slurm job's view of 1 GPU of that Traverse node (4 NICs, older mlx5 names)
    ("real/nvidia-smi-topo-m__v100-sxm2__1of4gpu-slurm-view__4-mlx5-columns__traverse.txt",
     1, tuple(f"mlx5_{i}" for i in range(4)), "single", None, None),
    # a driver of 2015, before NVLink: its legend's own wording ("SOC = Path traverses ..."), no
    # NV# line, tabs expanded by the list archive (test_topo_pcie_only)
    ("real/nvidia-smi-topo-m__kepler__4gpu-soc-phb__path-traverses-legend__ompi-users-2015.txt",
     4, (), "pcie", "SOC", False),
    # 2 x RTX 2080 Ti on one PCIe switch, no NIC (an AutoDL box: round 25's all-reduce capture)
    ("real/nvidia-smi-topo-m__geforce-rtx-2080-ti__2gpu-pix__autodl.txt",
     2, (), "pcie", "PIX", False),
    # a note's 8 x H100 NV18 mesh, space aligned, no NIC (its GPU 0's nvlink -s -i 0 beside it)
    ("real/nvidia-smi-topo-m__8x-h100-nv18__space-aligned__nccl-note.txt",
     8, (), "nvlink", "NV18", True),
    ("derived/nvidia-smi-topo-m__a100__4gpu-pcie__derived.txt",
     4, tuple(f"mlx5_{i}" for i in range(4)), "pcie", "SYS", False),
    # `topo -mp` of 4 x A100 on NVLink: PCIe paths only, no claim of PCIe (test_topo_pcie_only)
    ("real/nvidia-smi-topo-mp__a100__4gpu-4nic__juwels-booster.txt",
     4, tuple(f"mlx5_{i}" for i in range(4)), "unknown", "SYS", False),
    ("real/nvidia-smi-topo-mp__a100__4gpu-2nic__levante.txt",
     4, ("mlx5_0", "mlx5_1"), "unknown", "SYS", False),
]  # fmt: skip


@pytest.mark.parametrize(("name", "gpus", "nics", "kind", "weakest", "nvlink"), CASES)
def test_every_capture(
    name: str, gpus: int, nics: tuple[str, ...], kind: str, weakest: str | None, nvlink: bool | None
) -> None:
    topo = parse_topo((FIXTURES / name).read_text())
    assert topo.warnings == ()
    assert topo.gpus == tuple(f"GPU{i}" for i in range(gpus))
    assert topo.nics == nics
    assert interconnect(topo) == kind
    assert weakest_link(topo) == weakest
    assert all_pairs_nvlink(topo) is nvlink


def test_every_real_topo_is_covered() -> None:
    real = {p.name for p in (FIXTURES / "real").glob("nvidia-smi-topo-m*")}
    from .audit_captures import covered  # the truth audit's captures: tested there

    audit = covered("nvidia-smi-topo")
    cases = {name.split("/", 1)[1] for name, *_ in CASES if name.startswith("real/")}
    # an all-SYS matrix saved without any legend: facts/test_topo_pcie_only.py; a matrix cut short
    # whose verdict is the rule's: steps/checks/test_gpu_rules_cut.py
    elsewhere = {
        "nvidia-smi-topo-m__rtx4090__8gpu-2nic-all-sys__no-legend__go-gpuallocator-17.txt",
        "nvidia-smi-topo-m__8gpu-pix-phb-sys-mlx4__copied-command__cut-after-gpu4-row__kubernetes-53497.txt",
        # rows saved without the header row: facts/test_topo_headerless.py
        "nvidia-smi-topo-m__b200__header-row-lost__gpu2-no-nvlink__cut-in-gpu6-row__vllm-16336.txt",
        # a topo -m given alone (no GPU listing): api/test_offline_round32_host.py
        "nvidia-smi-topo-m__8x-h100-nv18__tab-separated-9-nics__cut-in-nic6-row__nccl-1453.txt",
        # a matrix cut inside its GPU rows, alone: api/test_offline_counts_r34.py
        "nvidia-smi-topo-m__8gpu-nv18-9nic__cut-in-gpu6-row__sglang-13973.txt",
    }
    assert real == cases | audit | {p.name for p in GLUED_CAPTURES} | elsewhere


def test_h200_details() -> None:
    topo = parse_topo((FIXTURES / "real/nvidia-smi-topo-m__h200__8gpu-10nic.txt").read_text())
    assert topo.links[("GPU0", "GPU7")] == "NV18"
    assert ("GPU0", "NIC0") not in topo.links  # GPU pairs only
    assert len(topo.links) == 8 * 7
    assert topo.cpu_affinity["GPU0"] == "0-63,128-191"
    assert topo.cpu_affinity["GPU7"] == "64-127,192-255"
    assert topo.numa_affinity == {f"GPU{i}": "0" if i < 4 else "1" for i in range(8)}
    assert topo.nic_legend["NIC9"] == "mlx5_9"


def test_ansi_escapes_stripped() -> None:
    name = "real/nvidia-smi-topo-m__h100-80gb-hbm3__1gpu__driver590.48.01__ansi-escapes.txt"
    topo = parse_topo((FIXTURES / name).read_text())
    assert topo.cpu_affinity == {"GPU0": "0-19"}
    assert topo.numa_affinity == {"GPU0": "0"}
    assert topo.links == {}


def test_h200_vm_single_gpu() -> None:
    text = (FIXTURES / "real/nvidia-smi-topo-m__h200__1gpu__driver580.159.04.txt").read_text()
    assert text.startswith("\t\x1b[4mGPU0\t")
    topo = parse_topo(text)
    assert topo.cpu_affinity == {"GPU0": "0-15"}  # all 16 vCPUs
    assert topo.numa_affinity == {"GPU0": "0"}
    assert topo.links == {} and topo.nic_legend == {}


def test_v100_details() -> None:
    name = "real/nvidia-smi-topo-m__v100-sxm2-32gb__4gpu-4nic__power9-traverse.txt"
    topo = parse_topo((FIXTURES / name).read_text())
    assert topo.links[("GPU0", "GPU1")] == "NV3"
    assert topo.links[("GPU2", "GPU3")] == "NV3"
    assert topo.links[("GPU1", "GPU2")] == "SYS"
    assert topo.numa_affinity == {"GPU0": "0", "GPU1": "0", "GPU2": "8", "GPU3": "8"}


def test_derived_pcie_has_node_where_nvlink_was() -> None:
    topo = parse_topo((FIXTURES / "derived/nvidia-smi-topo-m__a100__4gpu-pcie__derived.txt").read_text())
    assert topo.links[("GPU0", "GPU1")] == "NODE"
    assert not any(v.startswith("NV") for v in topo.links.values())


def test_weakest_ranks_nvlink_count_and_pcie_kinds() -> None:
    text = (
        "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tNV12\tNV4\t0-7\t0\n"
        "GPU1\tNV12\t X \tNV12\t0-7\t0\n"
        "GPU2\tNV4\tNV12\t X \t0-7\t0\n"
    )
    topo = parse_topo(text)
    assert weakest_link(topo) == "NV4"
    assert interconnect(topo) == "nvlink"
    mixed = parse_topo(text.replace("\tNV4\t", "\tPHB\t").replace("GPU2\tNV4", "GPU2\tPHB"))
    assert weakest_link(mixed) == "PHB"
    assert interconnect(mixed) == "mixed"
    pcie_only = text.replace("NV12", "PIX").replace("NV4", "PXB")
    pix = parse_topo(pcie_only + "\nLegend:\n\n  NV#  = Connection traversing a bonded set of # NVLinks\n")
    assert weakest_link(pix) == "PXB"
    assert interconnect(pix) == "pcie"
    # (no legend at all: a `topo -mp` prints the same PCIe-only matrix: not known to be PCIe)
    assert interconnect(parse_topo(pcie_only)) == "unknown"


@pytest.mark.parametrize(
    "text", ["", "random words\nmore words\n", "\x1b[4m\x1b[0m\n", "GPU0 X\n", "\tfoo\tbar\n"]
)
def test_garbage_warns_without_crash(text: str) -> None:
    topo = parse_topo(text)
    assert topo.gpus == ()
    assert topo.warnings
    assert interconnect(topo) == "unknown"
    assert weakest_link(topo) is None
    assert all_pairs_nvlink(topo) is None


def test_truncated_matrix_warns() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV18\t0-63\nGPU1\tNV18\n"
    topo = parse_topo(text)
    assert topo.gpus == ("GPU0", "GPU1")
    assert topo.warnings


# `nvidia-smi topo -m` read by alignment: a capture with its tabs expanded (pasted from a
# terminal or a document) gives the same Topology as the tab-separated original.

REAL = Path(__file__).parents[2] / "fixtures" / "real"
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


def _links_by_pair(t: Topology) -> dict[frozenset[str], set[str]]:
    """Each GPU pair's link as the rows read it (both rows, where both were read)."""
    pairs: dict[frozenset[str], set[str]] = {}
    for (a, b), link in t.links.items():
        if b in t.gpus:
            pairs.setdefault(frozenset((a, b)), set()).add(link)
    return pairs


@pytest.mark.parametrize("path", TAB_FIXTURES, ids=lambda p: p.name)
def test_a_row_whose_cells_a_paste_shifted_gives_no_other_link(path: Path) -> None:
    """Every real tab-separated matrix, re-spaced as a paste does it: a tab beside a space
    collapsed into one space (`GPU0\\t X \\tNV12` -> `GPU0 X NV12`), or one cell before a row's X
    lost. Before: the row was read in order from the shifted cells, so a DGX A100's GPU1-GPU7
    was PXB (a NIC's column) and its NVLink box "mixed"; a row's own cell must be its X."""
    text = path.read_text()
    whole = _links_by_pair(parse_topo(text))
    collapsed = re.sub(r"[ \t]{2,}", " ", text)
    assert _links_by_pair(parse_topo(collapsed)) == whole
    lost = "\n".join(
        "\t".join(cells[:1] + cells[2:]) if (cells := line.split("\t"))[0] == "GPU1" else line
        for line in text.split("\n")
    )
    shifted = parse_topo(lost)
    assert all(links <= whole[pair] for pair, links in _links_by_pair(shifted).items())
    assert interconnect(shifted) == interconnect(parse_topo(text))


TOPO_M = sorted((FIXTURES / "real").glob("nvidia-smi-topo-m*__*.txt"))


@pytest.mark.parametrize("path", TOPO_M, ids=lambda p: p.name[:60])
def test_a_matrix_wrapped_mid_labels_moves_no_verdict(tmp_path: Path, path: Path) -> None:
    """Every real `topo -m` (the widest: 8 GPUs and 17 NICs, 26 header labels) wrapped at 60 to
    160 columns, cutting its header between and inside labels (at the column, by word, by word
    with its tabs expanded first): each verdict is the capture's or unverified, never another."""
    import textwrap

    from ..offline_judge import column_wrapped, verdicts

    order = "interconnect: nvlink\ngpu_count: 8\n"
    text = path.read_text()
    whole = verdicts(tmp_path, path.name, text, order)

    def by_word(line: str, expand: bool) -> str:
        line = line.expandtabs(8) if expand else line
        return "\n".join(textwrap.wrap(line, width, break_on_hyphens=False)) if len(line) > width else line

    moved = []
    for width in (60, 80, 100, 120, 160):
        for how, pasted in (
            ("column", column_wrapped(text, width)),
            ("word", "\n".join(by_word(line, False) for line in text.split("\n"))),
            ("word, tabs expanded", "\n".join(by_word(line, True) for line in text.split("\n"))),
        ):
            got = verdicts(tmp_path, path.name, pasted, order)
            moved += [
                f"{width} {how}: {rule} {whole.get(rule, ('(none)', ''))[0]} -> {verdict}"
                for rule, (verdict, _) in got.items()
                if verdict not in (whole.get(rule, ("(none)", ""))[0], "unverified")
            ]
    assert not moved, "\n".join(moved[:10])


# Header labels a paste glued together (real: vLLM `collect-env` reports of 8 x B200 nodes).

GLUED_CAPTURES = tuple(
    REAL / f"nvidia-smi-topo-m__b200__{name}__first-4-rows__vllm-{issue}.txt"
    for name, issue in (
        ("8gpu-13nic__header-nic11nic12-glued", 31594),
        ("8gpu-12nic__header-nic11cpu-affinity-glued", 20862),
    )
)


@pytest.mark.parametrize(
    ("path", "cpus", "numa"),
    [
        (GLUED_CAPTURES[0], ["0-15"] * 4, ["0"] * 4),
        (GLUED_CAPTURES[1], ["0-27,112-139"] * 2 + ["28-55,140-167"] * 2, ["0", "0", "1", "1"]),
    ],
    ids=["NIC11NIC12", "NIC11CPU Affinity"],
)
def test_real_header_with_two_labels_glued(path: Path, cpus: list[str], numa: list[str]) -> None:
    """The real captures as the search index shows them (header and rows GPU0-GPU3: a matrix cut
    short). Before: the glued cell was one column, so every column after it was read one to the
    left: CPU affinity `NODE` (a NIC's column) or none, NUMA affinity the CPU list."""
    topo = parse_topo(path.read_text())
    gpus = tuple(f"GPU{i}" for i in range(4))
    assert topo.gpus == gpus and not topo.complete
    cut = "the matrix ends before the row of GPU4, GPU5, GPU6, GPU7: the output was cut short"
    assert topo.warnings == (cut,)
    assert dict(topo.cpu_affinity) == dict(zip(gpus, cpus, strict=True))
    assert dict(topo.numa_affinity) == dict(zip(gpus, numa, strict=True))
    assert {topo.links[(g, "GPU7")] for g in gpus} == {"NV18"}


_LABEL = re.compile(r"GPU NUMA ID|CPU Affinity|NUMA Affinity|GPU\d+|NIC\d+|mlx5_\d+")


def _glued_headers(text: str) -> list[tuple[str, str]]:
    """`text` once per pair of neighbouring header labels, the blank between them removed."""
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if "GPU0" in line and " X " not in line)
    labels = list(_LABEL.finditer(lines[at]))
    glued = []
    for left, right in zip(labels, labels[1:], strict=False):
        if lines[at][left.end() : right.start()].strip(" \t") == "":
            line = lines[at][: left.end()] + lines[at][right.start() :]
            pasted = "\n".join([*lines[:at], line, *lines[at + 1 :]])
            glued.append((f"{left.group(0)}{right.group(0)}", pasted))
    return glued


# (a matrix saved without its header row has no labels to glue: facts/test_topo_headerless.py)
HEADED = [p for p in TOPO_M if "header-row-lost" not in p.name]


@pytest.mark.parametrize("path", HEADED, ids=lambda p: p.name[:60])
def test_every_real_topo_glued_at_each_label_boundary(path: Path) -> None:
    """Every real `topo -m` with each pair of neighbouring header labels glued (`GPU6GPU7`,
    `NIC3CPU Affinity`, `mlx5_1mlx5_2`, ...) reads as the capture: the same links, NICs and
    affinities, no warning it did not give (a glued `GPU6GPU7` lost two GPU columns: its pairs
    unlinked, the matrix taken as cut short)."""
    text = path.read_text()
    whole = _facts(parse_topo(text))
    moved = [glue for glue, pasted in _glued_headers(text) if _facts(parse_topo(pasted)) != whole]
    assert len(_glued_headers(text)) >= 1
    assert not moved, moved


def test_glued_device_name_labels_of_an_older_driver() -> None:
    """The 8 x A100 capture with 17 NICs, its header's NIC labels written as an older driver
    prints them (the legend's device names, `mlx5_2` ... `mlx5_bond_0`), `mlx5_17` and
    `mlx5_bond_0` glued: the affinities stay in their columns."""
    path = REAL / "nvidia-smi-topo-m__a100__8gpu-17nic-bond__gpu-numa-id.txt"
    text = path.read_text()
    whole = parse_topo(text)
    lines = text.split("\n")
    header = re.sub(r"NIC(\d+)", lambda m: whole.nic_legend[m.group(0)], lines[0])
    lines[0] = re.sub(r"(mlx5_17)\s+(mlx5_bond_0)", r"\1\2", header)
    assert "mlx5_17mlx5_bond_0" in lines[0]
    glued = parse_topo("\n".join(lines))
    assert glued.warnings == () and glued.links == whole.links
    assert glued.cpu_affinity == whole.cpu_affinity and glued.numa_affinity == whole.numa_affinity
    assert glued.cpu_affinity["GPU7"] == "0-103" and glued.numa_affinity["GPU7"] == "0"


@pytest.mark.parametrize("end", ["", "\t", "\n"])
def test_a_matrix_cut_right_after_a_row_label_is_cut_short(end: str) -> None:
    """The real H100 PCIe matrix cut right after its first row's label (`GPU0`, then nothing, a
    tab or its newline): a GPU the header already has is a row, not the header's wrapped rest,
    so the matrix reads as cut short with GPU0's row begun; before, `GPU0` was read as a header
    label and no GPU row was read."""
    text = (FIXTURES / "real/nvidia-smi-topo-m__h100-pcie__2gpu-nv12__driver555.42.02.txt").read_text()
    topo = parse_topo(text.splitlines()[0] + "\nGPU0" + end)
    assert topo.gpus == ("GPU0",) and not topo.complete
    assert topo.warnings[-1] == "the matrix ends before the row of GPU1: the output was cut short"


CLUB = (
    "report-sh__nvidia-smi-topo-m-2gpu-node__indented-wrapped-legend__topo-p2p__lspci-t-cut"
    "__club-3090-1125.txt"
)


def test_an_indented_matrix_over_a_less_indented_wrapped_legend_is_read(tmp_path: Path) -> None:
    """noonghunna/club-3090#1125: a report's `topo -m` of 2 GPUs (NODE) pasted indented by 4,
    its legend's lines wrapped by the terminal with their rest indented by 2 only, so the paste's
    dedent left the rows indented. Before, no GPU row was read (interconnect unverified); the
    matrix's own rows' shared indent is taken off now: pcie passes."""
    from ..offline_judge import verdicts

    text = (FIXTURES / "real" / CLUB).read_text()
    got = verdicts(tmp_path, "topo.txt", text, "gpu_count: 2\ninterconnect: pcie\n")
    assert got["interconnect"] == ("pass", "pcie (weakest GPU link NODE)")


@pytest.mark.parametrize("indent", [1, 2, 4, 6])
def test_every_real_topo_with_its_rows_indented_reads_as_itself(indent: int) -> None:
    """Every real `topo -m` with each line after its header indented in-test by `indent`
    spaces more (the header left as it is: a page that indents the rows): read as the capture."""
    for path in TOPO_M:
        lines = path.read_text().split("\n")
        at = next(i for i, line in enumerate(lines) if re.search(r"GPU\d", line))
        shifted = lines[: at + 1] + [
            " " * indent + line if line.strip() else line for line in lines[at + 1 :]
        ]
        whole, moved = parse_topo("\n".join(lines)), parse_topo("\n".join(shifted))
        assert (moved.gpus, dict(moved.links)) == (whole.gpus, dict(whole.links)), path.name
