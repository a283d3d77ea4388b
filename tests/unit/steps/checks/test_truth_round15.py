"""Rule wording and verdicts on real captures of truth sweep round 15 (tests/fixtures/real/
SOURCES.md, round 15): each a sentence or a verdict that told something the output does not."""

from __future__ import annotations

import re
from pathlib import Path

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
LOG_NO_INDEX = "nvidia-smi-query-gpu-l1__1gpu-11gb__3-samples__no-index.csv"
LOG_INDEXED = "nvidia-smi-query-gpu-l1__1gpu__3-samples__index-power-clocks.csv"


def test_rows_of_a_log_without_index_are_named_as_rows_not_gpus(tmp_path: Path) -> None:
    """An `-l` log of one GPU's 3 samples without index, uuid or pci.bus_id: its rows are not
    known to be GPUs, so no rule names a 'GPU 1' or 'GPU 2' the box may not have."""
    judged = verdicts(tmp_path, LOG_NO_INDEX, (REAL / LOG_NO_INDEX).read_text())
    said = " | ".join(actual for _, actual in judged.values())
    assert not re.search(r"GPU [0-9]|3 GPUs", said), said
    assert "CSV row 1" in judged["temperature"][1]
    assert judged["mig_mode"][1] == "not reported for all 3 CSV rows"


def test_rows_of_an_indexed_log_are_its_gpu(tmp_path: Path) -> None:
    judged = verdicts(tmp_path, LOG_INDEXED, (REAL / LOG_INDEXED).read_text())
    said = " | ".join(actual for _, actual in judged.values())
    assert "GPU 0" in said and "CSV row" not in said, said


TOPO_H200 = "nvidia-smi-topo-m__h200__8gpu-10nic.txt"


def test_a_topo_matrix_whose_header_lost_its_tabs_is_said_unread(tmp_path: Path) -> None:
    """A paste that joined the header's columns (`GPU0GPU1...`): no column can be told apart, so
    no GPU row is read; said so, not as '0 of the ? GPUs'."""
    lines = (REAL / TOPO_H200).read_text().split("\n")
    lines[0] = lines[0].replace("\t", "")
    order = "gpu_model: H200\ngpu_count: 8\ninterconnect: nvlink"
    judged = verdicts(tmp_path, TOPO_H200, "\n".join(lines), order)
    assert judged["interconnect"] == (
        "unverified",
        "unknown: no GPU row of the nvidia-smi topo -m matrix could be read",
    )
