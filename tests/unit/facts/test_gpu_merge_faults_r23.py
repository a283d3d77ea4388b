"""Round 23's review: a fault one nvidia-smi format shows of a GPU another format read is a
fault of that GPU (facts/gpu_fields.py `_all_faults`, facts/gpu_unopened.py `_unopened_at`),
never lost to the richer format and never a GPU of its own. Each case is a real capture of one
box edited in the test
where its docstring says so: the GPU's table row turned into the line nvidia-smi prints for a
GPU it cannot open (worded as the real R610 capture
nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt prints it, first line of
the output) or into `ERR!` cells (as the real A40 and A30 captures' faulty rows read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
H200_TABLE = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"
H200_READERS = [
    REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml",
    REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt",
    REAL / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv",
]
H200_ROW = (
    "|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |                    0 |\n"
    "| N/A   35C    P0             77W /  700W |       0MiB / 143771MiB |      0%      Default |\n"
    "|                                         |                        |             Disabled |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
)
H200_ERR_ROW = (
    "|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |                 ERR! |\n"
    "| ERR!  ERR!    ERR!          ERR! / ERR! |       0MiB / 143771MiB |   ERR!       Default |\n"
    "|                                         |                        |                 ERR! |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
)
H200_LOST = "Unable to determine the device handle for GPU0: 0000:00:06.0: Unknown Error\n"
HPE_TABLE = REAL / "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt"
HPE_ECC = REAL / "nvidia-smi-q-d-ecc__a100-pcie-40gb__2gpu__driver555.42.02.txt"


def _h200_table(lost: bool) -> str:
    """The real H200 table with its one GPU lost (its row gone, the line in its place at the
    top) or its row read as ERR! cells."""
    text = H200_TABLE.read_text()
    assert H200_ROW in text
    if lost:
        return H200_LOST + text.replace(H200_ROW, "")
    return text.replace(H200_ROW, H200_ERR_ROW)


@pytest.mark.parametrize("reader", H200_READERS, ids=lambda p: p.suffix)
@pytest.mark.parametrize("lost", [True, False], ids=["no-handle", "err-cells"])
def test_a_gpu_the_table_could_not_read_is_a_fault_where_another_format_read_it(
    tmp_path: Path, reader: Path, lost: bool
) -> None:
    """The real H200 `-q -x`, `-q` or CSV (the GPU read) beside the same box's real table whose
    GPU could not be opened (edited here, see the module): gpu_health, gpu_count and gpu_model
    passed on the richer format's copy; now the fault is the GPU's, naming both formats."""
    table = _h200_table(lost)
    facts, got = judged_box(
        tmp_path, {reader.name: reader.read_text(), H200_TABLE.name: table}, "gpu_count: 1\n"
    )
    assert facts.gpu is not None and len(facts.gpu.gpus) == 1, facts.gpu
    health = got.get("gpu_health")
    assert health is not None and health.verdict == "fail", got
    assert "in the table while" in health.actual and "read it" in health.actual, health.actual
    assert ("no device handle" if lost else "ERR!") in health.actual
    assert (got["gpu_count"].verdict, got["gpu_count"].actual) == ("fail", "1 (1 unreadable)")


def test_a_gpu_the_richest_format_could_not_open_is_a_fault_where_the_table_read_it(tmp_path: Path) -> None:
    """The real H200 `-q` whose GPU block is replaced (here) by the no-handle line, beside the
    same box's real table that read the GPU: the table's healthy copy passed every rule."""
    text = H200_READERS[1].read_text()
    block = text[text.index("GPU 00000000:00:06.0") :]
    edited = text.replace(block, H200_LOST)
    facts, got = judged_box(
        tmp_path, {H200_READERS[1].name: edited, H200_TABLE.name: H200_TABLE.read_text()}, "gpu_count: 1\n"
    )
    assert facts.gpu is not None and len(facts.gpu.gpus) == 1
    assert "gpu_health" in got and got["gpu_health"].verdict == "fail", got
    assert "in -q while the table read it" in got["gpu_health"].actual, got["gpu_health"].actual
    assert got["gpu_count"].verdict == "fail"


def test_a_lost_gpu_of_two_is_that_gpus_fault_not_a_third_gpu(tmp_path: Path) -> None:
    """The real HPE A100 table of 2 GPUs with GPU 1's row replaced (here) by the no-handle line
    for its address, beside the same box's real `-q -d ECC` that read both: GPU 1 was read from
    `-q` and every rule passed; now it is GPU 1's fault (two GPUs, not three), naming both."""
    lines = HPE_TABLE.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("|   1  NVIDIA A100"))
    assert "00000000:8A:00.0" in lines[at] and lines[at + 3].startswith("+---")
    lost = "Unable to determine the device handle for GPU1: 0000:8A:00.0: Unknown Error\n"
    edited = "".join([lost, *lines[:at], *lines[at + 4 :]])
    facts, got = judged_box(
        tmp_path, {HPE_TABLE.name: edited, HPE_ECC.name: HPE_ECC.read_text()}, "gpu_count: 2\n"
    )
    assert facts.gpu is not None
    assert [(g.index, bool(g.faults)) for g in facts.gpu.gpus] == [(0, False), (1, True)]
    assert (got["gpu_count"].verdict, got["gpu_count"].actual) == ("fail", "2 (1 unreadable)")
    health = got.get("gpu_health")
    assert health is not None and health.verdict == "fail" and health.actual.startswith("GPU 1 "), got
    assert "no device handle: Unknown Error in the table while -q read it" in health.actual
