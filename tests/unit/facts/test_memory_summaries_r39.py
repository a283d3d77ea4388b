"""RAM totals of two more memory summaries (facts/memory.py read_memory; measure39d 14, 17):
`vmstat -s`'s `K total memory` (/proc/meminfo's MemTotal in KiB, exact), and procps top's summary
in its graph mode (`GiB Mem : 28.2/7.8 [ ]`: the percentage used over the total, to one decimal,
so judged with half its last digit either way; 28.2 is never the total)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import checks

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
VMSTAT = (REAL / "vmstat-s__4020152k-total-memory__no-prompt__dklog-33.txt").read_text(encoding="utf-8")
TOP_GRAPH = (REAL / "top-graph-mode__gib-mem-28.2-of-7.8__minikube-7987.txt").read_text(encoding="utf-8")


def _ram(tmp_path: Path, text: str, order: str) -> tuple[str, str, str]:
    found = {c.name: c for c in checks(tmp_path, "box.txt", text, order)}["ram"]
    return found.verdict, found.actual, found.detail


def test_vmstat_s_total_memory_is_memtotal(tmp_path: Path) -> None:
    verdict, actual, _ = _ram(tmp_path, VMSTAT, "ram: 4GB\n")
    assert verdict == "pass" and "3.8 GiB" in actual, actual
    assert "vmstat -s's total memory (/proc/meminfo's MemTotal: 4020152 kB)" in actual


@pytest.mark.parametrize("order", ["ram: 8GB\n", "ram: 5GB\n"])
def test_vmstat_s_short_of_the_order_fails(tmp_path: Path, order: str) -> None:
    assert _ram(tmp_path, VMSTAT, order)[0] == "fail"


def test_vmstat_s_cut_after_its_total_is_still_read(tmp_path: Path) -> None:
    cut = "\n".join(VMSTAT.splitlines()[:3]) + "\n       7543"
    verdict, actual, _ = _ram(tmp_path, cut, "ram: 4GB\n")
    assert verdict == "pass" and "4020152 kB" in actual, actual


def test_vmstat_s_in_mib_is_up_to_one_mib_more(tmp_path: Path) -> None:
    text = VMSTAT.replace("4020152 K total memory", "3925 M total memory").replace(" K ", " M ")
    verdict, actual, _ = _ram(tmp_path, text, "ram: 4GB\n")
    assert verdict == "pass" and "3.8 GiB" in actual, actual


def test_top_graph_mode_total_is_read_not_its_percentage(tmp_path: Path) -> None:
    verdict, actual, _ = _ram(tmp_path, TOP_GRAPH, "ram: 8GB\n")
    assert verdict == "pass" and "7.8 GiB" in actual and "top's Mem total" in actual, actual
    assert _ram(tmp_path, TOP_GRAPH, "ram: 32GB\n")[0] == "fail"  # (28.2 is a percentage)


def test_top_graph_mode_rounding_that_decides_is_unverified(tmp_path: Path) -> None:
    # 7.8 GiB to one decimal is 7.75-7.85 GiB: 8.3 GB less the tolerance (7.80 GiB) lies within it
    verdict, _actual, detail = _ram(tmp_path, TOP_GRAPH, "ram: 8.3GB\n")
    assert verdict == "unverified" and "rounded to its last decimal" in detail, detail


def test_top_graph_mode_with_an_unreadable_total_is_named(tmp_path: Path) -> None:
    text = TOP_GRAPH.replace("28.2/7.8 ", "28.2/1234567+")
    (tmp_path / "box.txt").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(tmp_path / "box.txt")])
    assert "top's memory summary in its graph mode" in str(err.value) and "free -k" in str(err.value)
