"""A `topo -m` matrix pasted right under an nvidia-smi output in one block, no prompt or heading
between them (measure36a 10: a Talos DGX report's table, cut at GPU 5, then its matrix of 8 GPUs
cut after NIC5): both read, each as an output of its own (api/script_blocks.output_then_matrix).
Before, the matrix was silently dropped ("no nvidia-smi topo -m output was given"); the table's
6 GPUs stay an incomplete listing, never a 6-GPU claim."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TALOS = (
    "nvidia-smi__h100-80gb-hbm3__8gpu-cut-at-gpu5__driver580.126.20__head-cut__topo-m-below-cut-after-nic5"
    "__talos-dgx-report.txt"
)
ORDER = 'gpu_model: H100 80GB HBM3\ngpu_count: 8\nvram: 80GB\nmin_driver: "580"\ninterconnect: nvlink\n'


def test_the_real_report_block_reads_its_matrix_and_its_cut_table(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / TALOS).read_text(), ORDER)
    assert got["interconnect"] == ("pass", "nvlink (weakest GPU link NV18)")
    assert got["gpu_count"][0] == "unverified"
    assert got["min_driver"][0] == "pass"


TOPOS = sorted(p.name for p in REAL.glob("nvidia-smi-topo-m__*.txt"))
TABLES = [
    "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt",
    "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt",
]


def _topology(path: Path) -> object:
    return parse_facts(offline.load_outputs([str(path)])).topology


@pytest.mark.parametrize("topo", TOPOS)
def test_every_real_matrix_under_a_real_table_is_read_as_it_is_alone(tmp_path: Path, topo: str) -> None:
    matrix = (REAL / topo).read_text(errors="replace")
    first = next(line for line in matrix.splitlines() if line.strip())
    if not re.match(r"[ \t]*GPU0[ \t]+GPU1", first):
        pytest.skip("the matrix's header is not its first line (a prompt, a lost header)")
    alone = tmp_path / "topo.txt"
    alone.write_text(matrix)
    for table in TABLES:
        both = tmp_path / f"{table}.txt"
        both.write_text((REAL / table).read_text() + "\n" + matrix)
        assert _topology(both) == _topology(alone), table
