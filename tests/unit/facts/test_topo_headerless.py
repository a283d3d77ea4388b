"""`nvidia-smi topo -m` rows saved without the header row naming the columns: each row's name
says which GPU it is and its own cell (X) stands in its own column, the GPUs' columns first, so
the GPU links are read; before, no row was read at all and interconnect was unverified with an
untrue "no GPU row could be read" (measure32c 17).

Real capture: tests/fixtures/real/SOURCES.md (vllm-project/vllm#16336)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.topo import parse_topo, whole_rows_without_nvlink

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
B200 = REAL / "nvidia-smi-topo-m__b200__header-row-lost__gpu2-no-nvlink__cut-in-gpu6-row__vllm-16336.txt"
MESH = REAL / "nvidia-smi-topo-m__h200__8gpu-10nic.txt"
ORDER = "gpu_model: B200\ngpu_count: 8\ninterconnect: nvlink\n"


def test_the_rows_are_read_by_their_own_x_cells() -> None:
    topo = parse_topo(B200.read_text())
    assert topo.gpus == tuple(f"GPU{i}" for i in range(7))
    assert topo.gpu_columns == tuple(f"GPU{i}" for i in range(8))  # (GPU7's column: its NV18 cells)
    assert topo.links[("GPU0", "GPU7")] == "NV18" and topo.links[("GPU2", "GPU4")] == "SYS"
    assert not topo.complete  # (no header: the columns after the GPUs' are not known)
    assert whole_rows_without_nvlink(topo) == ["GPU2"]


def test_a_gpu_without_nvlink_among_nvlinked_ones_fails(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "topo.txt", B200.read_text(), ORDER)["interconnect"]
    assert verdict == "fail", actual
    assert actual.startswith("GPU2 has NVLink to no other GPU"), actual


def test_a_whole_nvlink_mesh_without_its_header_is_read_not_failed(tmp_path: Path) -> None:
    """Edit: our H200 box's matrix with its header row (and legend) left out: every row is
    read, none without NVLink; the header's absence leaves the box's columns unknown."""
    lines = MESH.read_text().splitlines()
    rows = [line for line in lines if line.startswith("GPU")]
    topo = parse_topo("\n".join(rows) + "\n")
    assert topo.gpus == tuple(f"GPU{i}" for i in range(8)) and not whole_rows_without_nvlink(topo)
    verdict, actual = verdicts(tmp_path, "topo.txt", "\n".join(rows) + "\n", ORDER)["interconnect"]
    assert verdict != "fail" and "no GPU row" not in actual, actual


def test_rows_whose_x_is_not_under_their_own_column_are_not_placed() -> None:
    """Edit: GPU1's row with a cell lost before its X: no column can be told, no matrix read."""
    rows = [line for line in B200.read_text().splitlines() if line.startswith("GPU")]
    rows[1] = rows[1].replace("NV18     X", " X", 1)
    assert parse_topo("\n".join(rows) + "\n").gpus == ()
