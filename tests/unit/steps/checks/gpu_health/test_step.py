"""The gpu_health step's judging of what one GPU left unread (steps/checks/gpu_health/step.py),
on real captures edited in-test."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ....facts.test_gpu_merge import REAL, _judged

H200_LOAD_CSV = REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"


def test_a_csv_of_only_the_reasons_mask_with_an_na_row_is_unverified(tmp_path: Path) -> None:
    """The real H200 CSV cut to its `clocks_event_reasons.active` column (0x0...0, Not Active)
    with an `index` column added (0), and a second row added for GPU 1 whose mask reads `[N/A]`:
    a CSV that asked only the reasons. Before: throttling passed ("none active") on GPU 0's mask
    alone, as no GPU had a temperature, memory or utilisation to count as read."""
    rows = list(csv.reader(io.StringIO(H200_LOAD_CSV.read_text())))
    header = [h.strip() for h in rows[0]]
    mask = rows[1][header.index("clocks_event_reasons.active")].strip()
    text = f"index, clocks_event_reasons.active\n0, {mask}\n1, [N/A]\n"
    cut = tmp_path / "reasons.csv"
    cut.write_text(text)
    _facts, got = _judged(tmp_path, (cut,))
    check = got["throttling"]
    assert check.verdict == "unverified", check
    assert "GPU 1: clock event reasons not reported" in check.actual


A16_LIST = REAL / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt"


def test_gpus_only_listed_are_not_blamed_for_a_field_unread(tmp_path: Path) -> None:
    """The real H200 CSV cut to `index` (0) and its `clocks_event_reasons.active` mask, beside the
    real A16 `nvidia-smi -L` of 4 GPUs: GPUs 1-3 are only listed, nothing of them read. Before:
    "GPU 1: clock event reasons not reported" (x3) with the advice to ask the vendor to check
    that GPU; now the incomplete probe alone, with its own advice."""
    rows = list(csv.reader(io.StringIO(H200_LOAD_CSV.read_text())))
    header = [h.strip() for h in rows[0]]
    mask = rows[1][header.index("clocks_event_reasons.active")].strip()
    cut = tmp_path / "reasons.csv"
    cut.write_text(f"index, clocks_event_reasons.active\n0, {mask}\n")
    _facts, got = _judged(tmp_path, (cut, A16_LIST))
    check = got["throttling"]
    assert check.verdict == "unverified", check
    assert "incomplete probe" in check.actual and "not reported" not in check.actual
    assert "check that GPU" not in check.detail
