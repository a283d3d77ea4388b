"""A table row whose Bus-Id cell its poster cut to the domain (`00000000:`, DCGM#152) is a GPU's
row, its address unread, as a redacted one is: the row was dropped and the output said "no GPU
row of its output could be read", untrue of GPU 3's whole row (measure31a 21)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.nvidia_smi import parse_any

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
DCGM_152 = "nvidia-smi__a100-sxm4-80gb-mig__gpu3__driver535.104.05__bus-id-cut-to-domain__copied-command__cut-in-mig-head__dcgm-152.txt"  # noqa: E501


def test_the_row_with_its_bus_id_cut_to_the_domain_is_read() -> None:
    report = parse_any((REAL / DCGM_152).read_text(encoding="utf-8"))
    assert [(g.index, g.name, g.pci_bus_id) for g in report.gpus] == [(3, "NVIDIA A100-SXM4-80GB", None)]


def test_the_driver_rule_names_the_gpus_not_listed(tmp_path: Path) -> None:
    text = (REAL / DCGM_152).read_text(encoding="utf-8")
    got = verdicts(tmp_path, DCGM_152, text, "gpu_model: A100 80GB SXM\ngpu_count: 8\n")
    assert got["nvidia_driver"][0] == "unverified"
    assert "no GPU row" not in got["nvidia_driver"][1]
    assert "it lists GPU 3 but not GPU 0, 1, 2" in got["nvidia_driver"][1], got["nvidia_driver"]
