"""Old `nvidia-smi -q` labels (drivers R418-R470): `Ecc Mode`, `Virtualization mode`.

The -q text parser must read section and key names case-insensitively: a real R418 capture
(Tesla V100-SXM2-32GB, driver 418.67; tests/fixtures/real/SOURCES.md) prints `Ecc Mode` and
`Virtualization mode`, where newer drivers print `ECC Mode` and `Virtualization Mode`.
"""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.nvidia_smi import parse_text_q

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "real"
    / "nvidia-smi-q__tesla-v100-sxm2-32gb__1of4gpu__driver418.67.txt"
)


def test_r418_capture_prints_the_old_labels() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    assert "\n    Ecc Mode\n" in text and "ECC Mode" not in text
    assert "Virtualization mode         : None" in text


def test_r418_ecc_mode_is_read() -> None:
    gpu = parse_text_q(FIXTURE.read_text(encoding="utf-8")).gpus[0]
    assert gpu.name == "Tesla V100-SXM2-32GB"
    assert gpu.ecc_mode == "Enabled"  # "Ecc Mode / Current : Enabled"


def test_r418_virtualization_mode_is_read() -> None:
    gpu = parse_text_q(FIXTURE.read_text(encoding="utf-8")).gpus[0]
    assert gpu.virtualization_mode == "None"


def test_r418_other_fields_unchanged() -> None:
    gpu = parse_text_q(FIXTURE.read_text(encoding="utf-8")).gpus[0]
    assert gpu.pci_bus_id == "00000004:04:00.0"
    assert gpu.persistence_mode == "Enabled"
    assert gpu.memory_total_mib == 32480


def test_exact_case_wins_over_a_case_variant() -> None:
    """Where both spellings are present, the exact label is read (no guessing)."""
    text = (
        "GPU 00000000:07:00.0\n"
        "    Product Name                    : Tesla T4\n"
        "    ECC Mode\n"
        "        Current                     : Disabled\n"
        "    Ecc Mode\n"
        "        Current                     : Enabled\n"
    )
    assert parse_text_q(text).gpus[0].ecc_mode == "Disabled"


def test_r418_capture_is_one_of_four_and_says_so() -> None:
    """The author elided GPUs 1-3 (`...`): the report is incomplete, never a 1-GPU box."""
    report = parse_text_q(FIXTURE.read_text(encoding="utf-8"))
    assert (report.attached_gpus, len(report.gpus)) == (4, 1)
    assert "Attached GPUs says 4 but 1 GPU sections found" in report.warnings
