"""facts/nvidia_smi/table.py: a GPU row whose Bus-Id cell its poster redacted is still the GPU's
row, its address unread (never matched to another format's GPU by it). Real capture
(tests/fixtures/real), its redaction edited in-test to the other spellings posters use."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_table

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TELEGRAF = (
    "nvidia-smi__gtx-1050-ti__1gpu__driver430.14-cuda-na__"
    "bus-id-redacted__cut-at-processes__telegraf-6258.txt"
)
ORDER = "gpu_count: 1\ngpu_model: GTX 1050 Ti\n"


@pytest.mark.parametrize(
    "bus",
    ["xxxxxxxxxxxxxxxx", "XXXX", "****", "<redacted>", "[REDACTED]", "00000000:XX:00.0"],
)
def test_a_redacted_bus_id_keeps_the_gpus_row(tmp_path: Path, bus: str) -> None:
    """Round 30 (telegraf6258): influxdata/telegraf#6258's `nvidia-smi` (430.14, `CUDA Version:
    N/A`, GeForce GTX 105..., the Bus-Id cell redacted to `xxxxxxxxxxxxxxxx` by its poster, cut at
    `| Processes:`). The row was dropped as mangled: nvidia_driver, gpu_count and gpu_model were
    unverified, "no GPU row could be read". Now the GPU is read with no bus id: nvidia_driver
    fails on the whole banner's CUDA N/A, gpu_count passes 1, gpu_model warns on the cut name.
    Edited in-test: the redaction as other posters spell it (the cell's width kept)."""
    text = (REAL / TELEGRAF).read_text()
    assert "xxxxxxxxxxxxxxxx Off" in text
    text = text.replace("xxxxxxxxxxxxxxxx", bus.ljust(16), 1)
    report = parse_table(text)
    assert [(g.index, g.name, g.pci_bus_id) for g in report.gpus] == [(0, "GeForce GTX 105...", None)]
    got = verdicts(tmp_path, "nvidia-smi.txt", text, ORDER)
    assert got["nvidia_driver"] == ("fail", "driver 430.14, CUDA N/A"), got["nvidia_driver"]
    assert got["gpu_count"][0] == "pass" and got["gpu_model"][0] == "warn", got
